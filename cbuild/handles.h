/* Accessors for MPI's predefined handles and sentinels.
 *
 * In both MPIs these are cast macros (`((MPI_Comm)&ompi_mpi_comm_world)` in Open MPI,
 * `((MPI_Comm)0x44000000)` in MPICH), which bindgen cannot translate. Each accessor returns the
 * value the application would see, so Rust never hard-codes a flavor's handle representation. */
#ifndef SLUICE_CBUILD_HANDLES_H
#define SLUICE_CBUILD_HANDLES_H
#include <mpi.h>

MPI_Comm sluice_c_comm_world(void);
MPI_Comm sluice_c_comm_self(void);
MPI_Comm sluice_c_comm_null(void);
MPI_Datatype sluice_c_datatype_null(void);
MPI_Datatype sluice_c_byte(void);
MPI_Datatype sluice_c_uint64(void);
MPI_Datatype sluice_c_int(void);
MPI_Request sluice_c_request_null(void);
MPI_Message sluice_c_message_null(void);
MPI_Message sluice_c_message_no_proc(void);
MPI_Errhandler sluice_c_errors_return(void);
MPI_Status *sluice_c_status_ignore(void);
MPI_Status *sluice_c_statuses_ignore(void);
MPI_Fint *sluice_c_f_status_ignore(void);
MPI_Fint *sluice_c_f_statuses_ignore(void);
void *sluice_c_in_place(void);
void *sluice_c_bottom(void);
#endif
