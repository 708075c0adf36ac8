#include "handles.h"

MPI_Comm sluice_c_comm_world(void) { return MPI_COMM_WORLD; }
MPI_Op sluice_c_op_min(void) { return MPI_MIN; }
MPI_Op sluice_c_op_max(void) { return MPI_MAX; }
MPI_Comm sluice_c_comm_self(void) { return MPI_COMM_SELF; }
MPI_Comm sluice_c_comm_null(void) { return MPI_COMM_NULL; }
MPI_Datatype sluice_c_datatype_null(void) { return MPI_DATATYPE_NULL; }
MPI_Datatype sluice_c_byte(void) { return MPI_BYTE; }
MPI_Datatype sluice_c_packed(void) { return MPI_PACKED; }
MPI_Datatype sluice_c_uint64(void) { return MPI_UINT64_T; }
MPI_Datatype sluice_c_int(void) { return MPI_INT; }
MPI_Datatype sluice_c_double(void) { return MPI_DOUBLE; }
MPI_Datatype sluice_c_float(void) { return MPI_FLOAT; }
MPI_Datatype sluice_c_char(void) { return MPI_CHAR; }
MPI_Datatype sluice_c_short(void) { return MPI_SHORT; }
MPI_Datatype sluice_c_long_double(void) { return MPI_LONG_DOUBLE; }
MPI_Datatype sluice_c_c_double_complex(void) { return MPI_C_DOUBLE_COMPLEX; }
MPI_Datatype sluice_c_double_int(void) { return MPI_DOUBLE_INT; }
MPI_Datatype sluice_c_short_int(void) { return MPI_SHORT_INT; }
MPI_Datatype sluice_c_long_double_int(void) { return MPI_LONG_DOUBLE_INT; }
MPI_Datatype sluice_c_float_int(void) { return MPI_FLOAT_INT; }
MPI_Datatype sluice_c_long_int(void) { return MPI_LONG_INT; }
MPI_Datatype sluice_c_2int(void) { return MPI_2INT; }
MPI_Request sluice_c_request_null(void) { return MPI_REQUEST_NULL; }
MPI_Message sluice_c_message_null(void) { return MPI_MESSAGE_NULL; }
MPI_Message sluice_c_message_no_proc(void) { return MPI_MESSAGE_NO_PROC; }
MPI_Errhandler sluice_c_errors_return(void) { return MPI_ERRORS_RETURN; }
MPI_Info sluice_c_info_null(void) { return MPI_INFO_NULL; }
MPI_Status *sluice_c_status_ignore(void) { return MPI_STATUS_IGNORE; }
MPI_Status *sluice_c_statuses_ignore(void) { return MPI_STATUSES_IGNORE; }
MPI_Fint *sluice_c_f_status_ignore(void) { return MPI_F_STATUS_IGNORE; }
MPI_Fint *sluice_c_f_statuses_ignore(void) { return MPI_F_STATUSES_IGNORE; }
void *sluice_c_in_place(void) { return MPI_IN_PLACE; }
void *sluice_c_bottom(void) { return MPI_BOTTOM; }
int *sluice_c_unweighted(void) { return MPI_UNWEIGHTED; }
int *sluice_c_weights_empty(void) { return MPI_WEIGHTS_EMPTY; }

_Static_assert(sizeof(MPI_Fint) == sizeof(int), "sluice assumes MPI_Fint is C int");
