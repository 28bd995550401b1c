/* client/ops.c — being written */
