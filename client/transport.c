/* client/transport.c — being written */
