//! Fortran bindings of the topology constructors. Open MPI: its `mpif.h`/`use mpi` bindings call
//! `PMPI_*` directly, and its `mpi_f08` procedures, which take LOGICALs, call the Fortran
//! `pmpi_*_` symbols: both are exported. MPICH: `mpif.h` and `use mpi` call the C `MPI_*`
//! constructors, intercepted already, but its `mpi_f08` procedures (`mpi_cart_create_f08_`,
//! which converts the LOGICALs and weight sentinels itself) call `PMPI_*`: those are exported.
//!
//! LOGICAL arguments become C flags (nonzero is `.TRUE.`), the weight sentinels become C's,
//! handles go through `PMPI_*_f2c`/`c2f`; INTEGER arrays are passed as they are (a Fortran
//! INTEGER is a C `int`, [`Fint`]).

// Fortran signatures are fixed by the MPI standard.
#![allow(non_snake_case, clippy::too_many_arguments)]

use super::convert::*;
use super::run;
use crate::ffi::{consts, Fint};
use crate::intercept::exports as c;

fortran! {
    fn mpi_cart_create [ompi, ompi_f08, mpich_f08] (
        comm_old: *mut Fint, ndims: *mut Fint, dims: *mut Fint, periods: *mut Fint,
        reorder: *mut Fint, comm_cart: *mut Fint,
    ) {
        let mut nc = consts::comm_null();
        // SAFETY: Fortran references; `periods` holds `ndims` LOGICALs; one handle out.
        unsafe {
            let p = logicals(periods, int(ndims));
            let rc = c::MPI_Cart_create(comm_f2c(comm_old), int(ndims), dims, p.as_ptr(), logical(reorder), &mut nc);
            set_comm(comm_cart, nc);
            rc
        }
    }
    fn mpi_graph_create [ompi, ompi_f08, mpich_f08] (
        comm_old: *mut Fint, nnodes: *mut Fint, index: *mut Fint, edges: *mut Fint,
        reorder: *mut Fint, comm_graph: *mut Fint,
    ) {
        let mut nc = consts::comm_null();
        // SAFETY: Fortran references; the INTEGER arrays go to the C binding; one handle out.
        unsafe {
            let rc = c::MPI_Graph_create(comm_f2c(comm_old), int(nnodes), index, edges, logical(reorder), &mut nc);
            set_comm(comm_graph, nc);
            rc
        }
    }
    fn mpi_dist_graph_create_adjacent [ompi, ompi_f08, mpich_f08] (
        comm_old: *mut Fint, indegree: *mut Fint, sources: *mut Fint, sourceweights: *mut Fint,
        outdegree: *mut Fint, destinations: *mut Fint, destweights: *mut Fint, info: *mut Fint,
        reorder: *mut Fint, comm_dist_graph: *mut Fint,
    ) {
        let mut nc = consts::comm_null();
        // SAFETY: Fortran references; the INTEGER arrays (or weight sentinels, converted) go to
        // the C binding; one handle out.
        unsafe {
            let rc = c::MPI_Dist_graph_create_adjacent(
                comm_f2c(comm_old), int(indegree), sources, weights(sourceweights), int(outdegree),
                destinations, weights(destweights), info_f2c(info), logical(reorder), &mut nc,
            );
            set_comm(comm_dist_graph, nc);
            rc
        }
    }
    fn mpi_dist_graph_create [ompi, ompi_f08, mpich_f08] (
        comm_old: *mut Fint, n: *mut Fint, sources: *mut Fint, degrees: *mut Fint,
        destinations: *mut Fint, weights_arg: *mut Fint, info: *mut Fint, reorder: *mut Fint,
        comm_dist_graph: *mut Fint,
    ) {
        let mut nc = consts::comm_null();
        // SAFETY: as for the adjacent form.
        unsafe {
            let rc = c::MPI_Dist_graph_create(
                comm_f2c(comm_old), int(n), sources, degrees, destinations, weights(weights_arg),
                info_f2c(info), logical(reorder), &mut nc,
            );
            set_comm(comm_dist_graph, nc);
            rc
        }
    }
}
