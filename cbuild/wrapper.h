/* Everything bindgen reads: the MPI header plus sluice's C accessors. */
#include <mpi.h>
#include "handles.h"
