/* client/conn.c — being written */
