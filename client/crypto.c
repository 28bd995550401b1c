/* client/crypto.c — being written */
