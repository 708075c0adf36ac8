/* Run with SLUICE_TEST_PANIC=MPI_Send: the injected panic inside sluice must come back as
 * MPI_ERR_INTERN through MPI_COMM_WORLD's error handler (here MPI_ERRORS_RETURN), the process
 * must survive, and the next calls must work. With argv[1] == "fatal" the default handler
 * (MPI_ERRORS_ARE_FATAL) stays in place and the job must abort. */
#include <string.h>
#include "check.h"

int main(int argc, char **argv) {
    MPI_CHECK(MPI_Init(&argc, &argv));
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int fatal = argc > 1 && strcmp(argv[1], "fatal") == 0;
    if (!fatal) MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int x = rank;
    int rc = MPI_Send(&x, 1, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    EXPECT(cls == MPI_ERR_INTERN, "MPI_Send returned class %d, expected MPI_ERR_INTERN", cls);
    /* Other calls are unaffected. */
    int y = -1;
    MPI_CHECK(MPI_Sendrecv(&x, 1, MPI_INT, (rank + 1) % size, 1, &y, 1, MPI_INT, (rank + size - 1) % size, 1,
                           MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    EXPECT(y == (rank + size - 1) % size, "sendrecv after panic got %d", y);
    int rcv = report_verdict("errors");
    MPI_CHECK(MPI_Finalize());
    return rcv;
}
