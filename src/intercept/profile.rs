//! `SLUICE_PROFILE`'s hooks (`protocol::profile`): for each intercepted function, by name, what
//! its call sends to whom. [`profile_hook!`] expands, in every exported function
//! (`intercept::exports`), to the body of a closure that [`guard::call`](super::guard::call)
//! runs only while profiling (`Instrumented` mode), with `run` calling the handler; functions
//! not named here (receives, probes, completion, datatypes, ...) just run.
//!
//! Counting happens after the MPI accepted the call (the arguments are then valid); a persistent
//! request's handle is read before `MPI_Start`/`MPI_Startall`/`MPI_Request_free` run.

/// `run()`, then `$count` if it succeeded.
macro_rules! after {
    ($run:ident, $count:expr) => {{
        let rc = $run();
        if rc == $crate::ffi::errclass::SUCCESS {
            $count;
        }
        rc
    }};
}

/// `profile_hook!(MPI_Name, run, args...)`: the profiled call (`run` runs its handler).
macro_rules! profile_hook {
    (MPI_Send, $run:ident, $buf:ident, $n:ident, $dt:ident, $dest:ident, $tag:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::send($buf, $n as i64, $dt, $dest, $comm))
    }};
    (MPI_Bsend, $run:ident, $buf:ident, $n:ident, $dt:ident, $dest:ident, $tag:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::send($buf, $n as i64, $dt, $dest, $comm))
    }};
    (MPI_Ssend, $run:ident, $buf:ident, $n:ident, $dt:ident, $dest:ident, $tag:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::send($buf, $n as i64, $dt, $dest, $comm))
    }};
    (MPI_Rsend, $run:ident, $buf:ident, $n:ident, $dt:ident, $dest:ident, $tag:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::send($buf, $n as i64, $dt, $dest, $comm))
    }};
    (MPI_Isend, $run:ident, $buf:ident, $n:ident, $dt:ident, $dest:ident, $tag:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::send($buf, $n as i64, $dt, $dest, $comm))
    }};
    (MPI_Ibsend, $run:ident, $buf:ident, $n:ident, $dt:ident, $dest:ident, $tag:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::send($buf, $n as i64, $dt, $dest, $comm))
    }};
    (MPI_Issend, $run:ident, $buf:ident, $n:ident, $dt:ident, $dest:ident, $tag:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::send($buf, $n as i64, $dt, $dest, $comm))
    }};
    (MPI_Irsend, $run:ident, $buf:ident, $n:ident, $dt:ident, $dest:ident, $tag:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::send($buf, $n as i64, $dt, $dest, $comm))
    }};
    (MPI_Send_c, $run:ident, $buf:ident, $n:ident, $dt:ident, $dest:ident, $tag:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::send($buf, $n as i64, $dt, $dest, $comm))
    }};
    (MPI_Bsend_c, $run:ident, $buf:ident, $n:ident, $dt:ident, $dest:ident, $tag:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::send($buf, $n as i64, $dt, $dest, $comm))
    }};
    (MPI_Ssend_c, $run:ident, $buf:ident, $n:ident, $dt:ident, $dest:ident, $tag:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::send($buf, $n as i64, $dt, $dest, $comm))
    }};
    (MPI_Rsend_c, $run:ident, $buf:ident, $n:ident, $dt:ident, $dest:ident, $tag:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::send($buf, $n as i64, $dt, $dest, $comm))
    }};
    (MPI_Isend_c, $run:ident, $buf:ident, $n:ident, $dt:ident, $dest:ident, $tag:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::send($buf, $n as i64, $dt, $dest, $comm))
    }};
    (MPI_Ibsend_c, $run:ident, $buf:ident, $n:ident, $dt:ident, $dest:ident, $tag:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::send($buf, $n as i64, $dt, $dest, $comm))
    }};
    (MPI_Issend_c, $run:ident, $buf:ident, $n:ident, $dt:ident, $dest:ident, $tag:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::send($buf, $n as i64, $dt, $dest, $comm))
    }};
    (MPI_Irsend_c, $run:ident, $buf:ident, $n:ident, $dt:ident, $dest:ident, $tag:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::send($buf, $n as i64, $dt, $dest, $comm))
    }};
    (MPI_Sendrecv, $run:ident, $buf:ident, $n:ident, $dt:ident, $dest:ident, $t:ident, $rb:ident, $rn:ident, $rt:ident, $src:ident, $rtag:ident, $comm:ident, $st:ident) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::send($buf, $n as i64, $dt, $dest, $comm))
    }};
    (MPI_Sendrecv_c, $run:ident, $buf:ident, $n:ident, $dt:ident, $dest:ident, $t:ident, $rb:ident, $rn:ident, $rt:ident, $src:ident, $rtag:ident, $comm:ident, $st:ident) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::send($buf, $n as i64, $dt, $dest, $comm))
    }};
    (MPI_Sendrecv_replace, $run:ident, $buf:ident, $n:ident, $dt:ident, $dest:ident, $t:ident, $src:ident, $rtag:ident, $comm:ident, $st:ident) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::send($buf, $n as i64, $dt, $dest, $comm))
    }};
    (MPI_Sendrecv_replace_c, $run:ident, $buf:ident, $n:ident, $dt:ident, $dest:ident, $t:ident, $src:ident, $rtag:ident, $comm:ident, $st:ident) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::send($buf, $n as i64, $dt, $dest, $comm))
    }};
    (MPI_Send_init, $run:ident, $buf:ident, $n:ident, $dt:ident, $dest:ident, $tag:ident, $comm:ident, $req:ident) => {{
        // SAFETY: the request argument of a successful call.
        $crate::intercept::profile::after!($run, unsafe { $crate::protocol::profile::send_init($buf, $n as i64, $dt, $dest, $comm, $req) })
    }};
    (MPI_Bsend_init, $run:ident, $buf:ident, $n:ident, $dt:ident, $dest:ident, $tag:ident, $comm:ident, $req:ident) => {{
        // SAFETY: the request argument of a successful call.
        $crate::intercept::profile::after!($run, unsafe { $crate::protocol::profile::send_init($buf, $n as i64, $dt, $dest, $comm, $req) })
    }};
    (MPI_Ssend_init, $run:ident, $buf:ident, $n:ident, $dt:ident, $dest:ident, $tag:ident, $comm:ident, $req:ident) => {{
        // SAFETY: the request argument of a successful call.
        $crate::intercept::profile::after!($run, unsafe { $crate::protocol::profile::send_init($buf, $n as i64, $dt, $dest, $comm, $req) })
    }};
    (MPI_Rsend_init, $run:ident, $buf:ident, $n:ident, $dt:ident, $dest:ident, $tag:ident, $comm:ident, $req:ident) => {{
        // SAFETY: the request argument of a successful call.
        $crate::intercept::profile::after!($run, unsafe { $crate::protocol::profile::send_init($buf, $n as i64, $dt, $dest, $comm, $req) })
    }};
    (MPI_Send_init_c, $run:ident, $buf:ident, $n:ident, $dt:ident, $dest:ident, $tag:ident, $comm:ident, $req:ident) => {{
        // SAFETY: the request argument of a successful call.
        $crate::intercept::profile::after!($run, unsafe { $crate::protocol::profile::send_init($buf, $n as i64, $dt, $dest, $comm, $req) })
    }};
    (MPI_Bsend_init_c, $run:ident, $buf:ident, $n:ident, $dt:ident, $dest:ident, $tag:ident, $comm:ident, $req:ident) => {{
        // SAFETY: the request argument of a successful call.
        $crate::intercept::profile::after!($run, unsafe { $crate::protocol::profile::send_init($buf, $n as i64, $dt, $dest, $comm, $req) })
    }};
    (MPI_Ssend_init_c, $run:ident, $buf:ident, $n:ident, $dt:ident, $dest:ident, $tag:ident, $comm:ident, $req:ident) => {{
        // SAFETY: the request argument of a successful call.
        $crate::intercept::profile::after!($run, unsafe { $crate::protocol::profile::send_init($buf, $n as i64, $dt, $dest, $comm, $req) })
    }};
    (MPI_Rsend_init_c, $run:ident, $buf:ident, $n:ident, $dt:ident, $dest:ident, $tag:ident, $comm:ident, $req:ident) => {{
        // SAFETY: the request argument of a successful call.
        $crate::intercept::profile::after!($run, unsafe { $crate::protocol::profile::send_init($buf, $n as i64, $dt, $dest, $comm, $req) })
    }};
    (MPI_Recv_init, $run:ident, $buf:ident, $n:ident, $dt:ident, $src:ident, $tag:ident, $comm:ident, $req:ident) => {{
        // SAFETY: the request argument of a successful call.
        $crate::intercept::profile::after!($run, unsafe { $crate::protocol::profile::forget($req) })
    }};
    (MPI_Recv_init_c, $run:ident, $buf:ident, $n:ident, $dt:ident, $src:ident, $tag:ident, $comm:ident, $req:ident) => {{
        // SAFETY: the request argument of a successful call.
        $crate::intercept::profile::after!($run, unsafe { $crate::protocol::profile::forget($req) })
    }};
    (MPI_Request_free, $run:ident, $req:ident) => {{
        // SAFETY: the application's request argument (the MPI checks it).
        unsafe { $crate::protocol::profile::forget($req) };
        $run()
    }};
    (MPI_Start, $run:ident, $req:ident) => {{
        // SAFETY: the application's request argument (the MPI checks it).
        let s = if $req.is_null() { Vec::new() } else { unsafe { $crate::protocol::profile::started($req, 1) } };
        $crate::intercept::profile::after!($run, $crate::protocol::profile::count_started(s))
    }};
    (MPI_Startall, $run:ident, $n:ident, $reqs:ident) => {{
        // SAFETY: the application's `count` requests.
        let s = unsafe { $crate::protocol::profile::started($reqs, $n.max(0) as usize) };
        $crate::intercept::profile::after!($run, $crate::protocol::profile::count_started(s))
    }};
    (MPI_Bcast, $run:ident, $buf:ident, $n:ident, $dt:ident, $root:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::rooted_out($buf, $n as i64, $dt, $root, $comm))
    }};
    (MPI_Ibcast, $run:ident, $buf:ident, $n:ident, $dt:ident, $root:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::rooted_out($buf, $n as i64, $dt, $root, $comm))
    }};
    (MPI_Scatter, $run:ident, $sb:ident, $sc:ident, $st:ident, $rb:ident, $rc:ident, $rt:ident, $root:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::rooted_out($sb, $sc as i64, $st, $root, $comm))
    }};
    (MPI_Iscatter, $run:ident, $sb:ident, $sc:ident, $st:ident, $rb:ident, $rc:ident, $rt:ident, $root:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::rooted_out($sb, $sc as i64, $st, $root, $comm))
    }};
    (MPI_Scatterv, $run:ident, $sb:ident, $scs:ident, $sd:ident, $st:ident, $rb:ident, $rc:ident, $rt:ident, $root:ident, $comm:ident $(, $x:ident)*) => {{
        // SAFETY: the send counts of a successful call (one per peer on the root).
        $crate::intercept::profile::after!($run, unsafe { $crate::protocol::profile::scatterv($sb, $scs, $st, $root, $comm) })
    }};
    (MPI_Iscatterv, $run:ident, $sb:ident, $scs:ident, $sd:ident, $st:ident, $rb:ident, $rc:ident, $rt:ident, $root:ident, $comm:ident $(, $x:ident)*) => {{
        // SAFETY: the send counts of a successful call (one per peer on the root).
        $crate::intercept::profile::after!($run, unsafe { $crate::protocol::profile::scatterv($sb, $scs, $st, $root, $comm) })
    }};
    (MPI_Gather, $run:ident, $sb:ident, $sc:ident, $st:ident, $rb:ident, $rc:ident, $rt:ident, $root:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::gather($sb, $sc as i64, $st, $root, $comm))
    }};
    (MPI_Igather, $run:ident, $sb:ident, $sc:ident, $st:ident, $rb:ident, $rc:ident, $rt:ident, $root:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::gather($sb, $sc as i64, $st, $root, $comm))
    }};
    (MPI_Gatherv, $run:ident, $sb:ident, $sc:ident, $st:ident, $rb:ident, $rcs:ident, $rd:ident, $rt:ident, $root:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::gather($sb, $sc as i64, $st, $root, $comm))
    }};
    (MPI_Igatherv, $run:ident, $sb:ident, $sc:ident, $st:ident, $rb:ident, $rcs:ident, $rd:ident, $rt:ident, $root:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::gather($sb, $sc as i64, $st, $root, $comm))
    }};
    (MPI_Alltoall, $run:ident, $sb:ident, $sc:ident, $st:ident, $rb:ident, $rc:ident, $rt:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::alltoall($sb, $sc, $st, $rb, $rc, $rt, $comm))
    }};
    (MPI_Ialltoall, $run:ident, $sb:ident, $sc:ident, $st:ident, $rb:ident, $rc:ident, $rt:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::alltoall($sb, $sc, $st, $rb, $rc, $rt, $comm))
    }};
    (MPI_Alltoallv, $run:ident, $sb:ident, $scs:ident, $sd:ident, $st:ident, $rb:ident, $rcs:ident, $rd:ident, $rt:ident, $comm:ident $(, $x:ident)*) => {{
        // SAFETY: the count arrays of a successful call (one entry per peer).
        $crate::intercept::profile::after!($run, unsafe { $crate::protocol::profile::alltoallv($sb, $scs, $st, $rb, $rcs, $rt, $comm) })
    }};
    (MPI_Ialltoallv, $run:ident, $sb:ident, $scs:ident, $sd:ident, $st:ident, $rb:ident, $rcs:ident, $rd:ident, $rt:ident, $comm:ident $(, $x:ident)*) => {{
        // SAFETY: the count arrays of a successful call (one entry per peer).
        $crate::intercept::profile::after!($run, unsafe { $crate::protocol::profile::alltoallv($sb, $scs, $st, $rb, $rcs, $rt, $comm) })
    }};
    (MPI_Alltoallw, $run:ident, $sb:ident, $scs:ident, $sd:ident, $sts:ident, $rb:ident, $rcs:ident, $rd:ident, $rts:ident, $comm:ident $(, $x:ident)*) => {{
        // SAFETY: the count and type arrays of a successful call (one entry per peer).
        $crate::intercept::profile::after!($run, unsafe { $crate::protocol::profile::alltoallw($sb, $scs, $sts, $rb, $rcs, $rts, $comm) })
    }};
    (MPI_Ialltoallw, $run:ident, $sb:ident, $scs:ident, $sd:ident, $sts:ident, $rb:ident, $rcs:ident, $rd:ident, $rts:ident, $comm:ident $(, $x:ident)*) => {{
        // SAFETY: the count and type arrays of a successful call (one entry per peer).
        $crate::intercept::profile::after!($run, unsafe { $crate::protocol::profile::alltoallw($sb, $scs, $sts, $rb, $rcs, $rts, $comm) })
    }};
    (MPI_Neighbor_allgather, $run:ident, $sb:ident, $sc:ident, $st:ident, $rb:ident, $rc:ident, $rt:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::neighbor_same($sb, $sc as i64, $st, $comm))
    }};
    (MPI_Ineighbor_allgather, $run:ident, $sb:ident, $sc:ident, $st:ident, $rb:ident, $rc:ident, $rt:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::neighbor_same($sb, $sc as i64, $st, $comm))
    }};
    (MPI_Neighbor_alltoall, $run:ident, $sb:ident, $sc:ident, $st:ident, $rb:ident, $rc:ident, $rt:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::neighbor_same($sb, $sc as i64, $st, $comm))
    }};
    (MPI_Ineighbor_alltoall, $run:ident, $sb:ident, $sc:ident, $st:ident, $rb:ident, $rc:ident, $rt:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::neighbor_same($sb, $sc as i64, $st, $comm))
    }};
    (MPI_Neighbor_allgatherv, $run:ident, $sb:ident, $sc:ident, $st:ident, $rb:ident, $rcs:ident, $rd:ident, $rt:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::neighbor_same($sb, $sc as i64, $st, $comm))
    }};
    (MPI_Ineighbor_allgatherv, $run:ident, $sb:ident, $sc:ident, $st:ident, $rb:ident, $rcs:ident, $rd:ident, $rt:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::neighbor_same($sb, $sc as i64, $st, $comm))
    }};
    (MPI_Neighbor_alltoallv, $run:ident, $sb:ident, $scs:ident, $sd:ident, $st:ident, $rb:ident, $rcs:ident, $rd:ident, $rt:ident, $comm:ident $(, $x:ident)*) => {{
        // SAFETY: the send counts of a successful call (one per out-neighbor).
        $crate::intercept::profile::after!($run, unsafe { $crate::protocol::profile::neighbor_v($sb, $scs, $st, $comm) })
    }};
    (MPI_Ineighbor_alltoallv, $run:ident, $sb:ident, $scs:ident, $sd:ident, $st:ident, $rb:ident, $rcs:ident, $rd:ident, $rt:ident, $comm:ident $(, $x:ident)*) => {{
        // SAFETY: the send counts of a successful call (one per out-neighbor).
        $crate::intercept::profile::after!($run, unsafe { $crate::protocol::profile::neighbor_v($sb, $scs, $st, $comm) })
    }};
    (MPI_Neighbor_alltoallw, $run:ident, $sb:ident, $scs:ident, $sd:ident, $sts:ident, $rb:ident, $rcs:ident, $rd:ident, $rts:ident, $comm:ident $(, $x:ident)*) => {{
        // SAFETY: the send counts and types of a successful call (one per out-neighbor).
        $crate::intercept::profile::after!($run, unsafe { $crate::protocol::profile::neighbor_w($sb, $scs, $sts, $comm) })
    }};
    (MPI_Ineighbor_alltoallw, $run:ident, $sb:ident, $scs:ident, $sd:ident, $sts:ident, $rb:ident, $rcs:ident, $rd:ident, $rts:ident, $comm:ident $(, $x:ident)*) => {{
        // SAFETY: the send counts and types of a successful call (one per out-neighbor).
        $crate::intercept::profile::after!($run, unsafe { $crate::protocol::profile::neighbor_w($sb, $scs, $sts, $comm) })
    }};
    (MPI_Allgather, $run:ident, $sb:ident, $sc:ident, $st:ident, $rb:ident, $rc:ident, $rt:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::allgather($sb, $sc, $st, $rb, $rc, $rt))
    }};
    (MPI_Iallgather, $run:ident, $sb:ident, $sc:ident, $st:ident, $rb:ident, $rc:ident, $rt:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::allgather($sb, $sc, $st, $rb, $rc, $rt))
    }};
    (MPI_Allgatherv, $run:ident, $sb:ident, $sc:ident, $st:ident, $rb:ident, $rcs:ident, $rd:ident, $rt:ident, $comm:ident $(, $x:ident)*) => {{
        // SAFETY: the receive counts of a successful call (one per rank).
        $crate::intercept::profile::after!($run, unsafe { $crate::protocol::profile::allgatherv($sb, $sc, $st, $rb, $rcs, $rt, $comm) })
    }};
    (MPI_Iallgatherv, $run:ident, $sb:ident, $sc:ident, $st:ident, $rb:ident, $rcs:ident, $rd:ident, $rt:ident, $comm:ident $(, $x:ident)*) => {{
        // SAFETY: the receive counts of a successful call (one per rank).
        $crate::intercept::profile::after!($run, unsafe { $crate::protocol::profile::allgatherv($sb, $sc, $st, $rb, $rcs, $rt, $comm) })
    }};
    (MPI_Reduce, $run:ident, $sb:ident, $rb:ident, $n:ident, $dt:ident, $op:ident, $root:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!(
            $run,
            $crate::protocol::profile::contribution($crate::protocol::profile::reduce_buf($sb, $rb), $n as i64, $dt)
        )
    }};
    (MPI_Ireduce, $run:ident, $sb:ident, $rb:ident, $n:ident, $dt:ident, $op:ident, $root:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!(
            $run,
            $crate::protocol::profile::contribution($crate::protocol::profile::reduce_buf($sb, $rb), $n as i64, $dt)
        )
    }};
    (MPI_Allreduce, $run:ident, $sb:ident, $rb:ident, $n:ident, $dt:ident, $op:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!(
            $run,
            $crate::protocol::profile::contribution($crate::protocol::profile::reduce_buf($sb, $rb), $n as i64, $dt)
        )
    }};
    (MPI_Iallreduce, $run:ident, $sb:ident, $rb:ident, $n:ident, $dt:ident, $op:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!(
            $run,
            $crate::protocol::profile::contribution($crate::protocol::profile::reduce_buf($sb, $rb), $n as i64, $dt)
        )
    }};
    (MPI_Scan, $run:ident, $sb:ident, $rb:ident, $n:ident, $dt:ident, $op:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!(
            $run,
            $crate::protocol::profile::contribution($crate::protocol::profile::reduce_buf($sb, $rb), $n as i64, $dt)
        )
    }};
    (MPI_Iscan, $run:ident, $sb:ident, $rb:ident, $n:ident, $dt:ident, $op:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!(
            $run,
            $crate::protocol::profile::contribution($crate::protocol::profile::reduce_buf($sb, $rb), $n as i64, $dt)
        )
    }};
    (MPI_Exscan, $run:ident, $sb:ident, $rb:ident, $n:ident, $dt:ident, $op:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!(
            $run,
            $crate::protocol::profile::contribution($crate::protocol::profile::reduce_buf($sb, $rb), $n as i64, $dt)
        )
    }};
    (MPI_Iexscan, $run:ident, $sb:ident, $rb:ident, $n:ident, $dt:ident, $op:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!(
            $run,
            $crate::protocol::profile::contribution($crate::protocol::profile::reduce_buf($sb, $rb), $n as i64, $dt)
        )
    }};
    (MPI_Reduce_scatter_block, $run:ident, $sb:ident, $rb:ident, $rc:ident, $dt:ident, $op:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::reduce_scatter_block($sb, $rb, $rc, $dt, $comm))
    }};
    (MPI_Ireduce_scatter_block, $run:ident, $sb:ident, $rb:ident, $rc:ident, $dt:ident, $op:ident, $comm:ident $(, $x:ident)*) => {{
        $crate::intercept::profile::after!($run, $crate::protocol::profile::reduce_scatter_block($sb, $rb, $rc, $dt, $comm))
    }};
    (MPI_Reduce_scatter, $run:ident, $sb:ident, $rb:ident, $rcs:ident, $dt:ident, $op:ident, $comm:ident $(, $x:ident)*) => {{
        // SAFETY: the receive counts of a successful call (one per rank).
        $crate::intercept::profile::after!($run, unsafe { $crate::protocol::profile::reduce_scatter($sb, $rb, $rcs, $dt, $comm) })
    }};
    (MPI_Ireduce_scatter, $run:ident, $sb:ident, $rb:ident, $rcs:ident, $dt:ident, $op:ident, $comm:ident $(, $x:ident)*) => {{
        // SAFETY: the receive counts of a successful call (one per rank).
        $crate::intercept::profile::after!($run, unsafe { $crate::protocol::profile::reduce_scatter($sb, $rb, $rcs, $dt, $comm) })
    }};
    ($other:ident, $run:ident $(, $a:ident)*) => {
        $run()
    };
}

pub(crate) use {after, profile_hook};
