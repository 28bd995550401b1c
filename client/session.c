/* client/session.c — being written */
