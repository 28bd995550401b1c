/* client/transport_tcp.c — being written */
