/* Accessors for MPI's predefined handles and sentinels.
 *
 * In both MPIs these are cast macros (`((MPI_Comm)&ompi_mpi_comm_world)` in Open MPI,
 * `((MPI_Comm)0x44000000)` in MPICH), which bindgen cannot translate. Each accessor returns the
 * value the application would see, so Rust never hard-codes a flavor's handle representation. */
#ifndef SLUICE_CBUILD_HANDLES_H
#define SLUICE_CBUILD_HANDLES_H
#include <mpi.h>

MPI_Comm sluice_c_comm_world(void);
MPI_Op sluice_c_op_min(void);
MPI_Op sluice_c_op_max(void);
MPI_Comm sluice_c_comm_self(void);
MPI_Comm sluice_c_comm_null(void);
MPI_Datatype sluice_c_datatype_null(void);
MPI_Datatype sluice_c_byte(void);
MPI_Datatype sluice_c_packed(void);
MPI_Datatype sluice_c_uint64(void);
MPI_Datatype sluice_c_int(void);
MPI_Datatype sluice_c_double(void);
MPI_Datatype sluice_c_float(void);
MPI_Datatype sluice_c_char(void);
MPI_Datatype sluice_c_short(void);
MPI_Datatype sluice_c_long_double(void);
MPI_Datatype sluice_c_c_double_complex(void);
MPI_Datatype sluice_c_double_int(void);
MPI_Datatype sluice_c_short_int(void);
MPI_Datatype sluice_c_long_double_int(void);
MPI_Datatype sluice_c_float_int(void);
MPI_Datatype sluice_c_long_int(void);
MPI_Datatype sluice_c_2int(void);
MPI_Request sluice_c_request_null(void);
MPI_Message sluice_c_message_null(void);
MPI_Message sluice_c_message_no_proc(void);
MPI_Errhandler sluice_c_errors_return(void);
MPI_Info sluice_c_info_null(void);
MPI_Status *sluice_c_status_ignore(void);
MPI_Status *sluice_c_statuses_ignore(void);
MPI_Fint *sluice_c_f_status_ignore(void);
MPI_Fint *sluice_c_f_statuses_ignore(void);
void *sluice_c_in_place(void);
void *sluice_c_bottom(void);
int *sluice_c_unweighted(void);
int *sluice_c_weights_empty(void);

/* Combiner values under one name for both MPIs: MPICH declares them in a named enum
 * (MPIR_Combiner_enum) that bindgen would export under flavor-specific names. */
enum {
    SLUICE_COMBINER_NAMED = MPI_COMBINER_NAMED,
    SLUICE_COMBINER_DUP = MPI_COMBINER_DUP,
    SLUICE_COMBINER_CONTIGUOUS = MPI_COMBINER_CONTIGUOUS,
    SLUICE_COMBINER_VECTOR = MPI_COMBINER_VECTOR,
    SLUICE_COMBINER_HVECTOR = MPI_COMBINER_HVECTOR,
    SLUICE_COMBINER_INDEXED = MPI_COMBINER_INDEXED,
    SLUICE_COMBINER_HINDEXED = MPI_COMBINER_HINDEXED,
    SLUICE_COMBINER_INDEXED_BLOCK = MPI_COMBINER_INDEXED_BLOCK,
    SLUICE_COMBINER_HINDEXED_BLOCK = MPI_COMBINER_HINDEXED_BLOCK,
    SLUICE_COMBINER_STRUCT = MPI_COMBINER_STRUCT,
    SLUICE_COMBINER_SUBARRAY = MPI_COMBINER_SUBARRAY,
    SLUICE_COMBINER_DARRAY = MPI_COMBINER_DARRAY,
    SLUICE_COMBINER_F90_REAL = MPI_COMBINER_F90_REAL,
    SLUICE_COMBINER_F90_COMPLEX = MPI_COMBINER_F90_COMPLEX,
    SLUICE_COMBINER_F90_INTEGER = MPI_COMBINER_F90_INTEGER,
    SLUICE_COMBINER_RESIZED = MPI_COMBINER_RESIZED,
};

/* Topology kinds (MPI_Topo_test) under one name: MPICH declares them in a named enum. */
enum {
    SLUICE_TOPO_GRAPH = MPI_GRAPH,
    SLUICE_TOPO_CART = MPI_CART,
    SLUICE_TOPO_DIST_GRAPH = MPI_DIST_GRAPH,
};
#endif
