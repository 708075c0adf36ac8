//! Fortran entry points.
//!
//! **Open MPI** (`sluice_mpi = "openmpi"`): its Fortran bindings (`mpif.h`, `use mpi`,
//! `use mpi_f08`) call `PMPI_*` directly, so the C exports never see Fortran traffic. In
//! `libmpi_mpifh.so`, `mpi_send_`, `mpi_send__`, `mpi_send` and `MPI_SEND` are weak aliases of
//! `ompi_send_f`, and most `mpi_f08` procedures (`mpi_send_f08_`) call `ompi_send_f@plt`. sluice
//! therefore exports all five names for every intercepted function. The `mpi_f08` procedures
//! with a LOGICAL argument (`MPI_Test*`, `MPI_Iprobe`, `MPI_Improbe`, `MPI_Request_get_status`)
//! call the Fortran PMPI symbol (`pmpi_test_`) instead: for those sluice also exports the
//! `mpi_f08` procedure itself (`mpi_test_f08_`).
//!
//! **MPICH** (`sluice_mpi = "mpich"`): `mpif.h` and `use mpi` call the C `MPI_*` symbols, which
//! are intercepted already. `mpi_f08` (MPICH 4.0) calls the C `MPI_*` for the calls with a
//! buffer argument, but `PMPI_*` for init/finalize, completion, probes, `MPI_Start*`, datatype
//! and communicator calls: sluice exports those `mpi_f08` procedures (`mpi_wait_f08_`, ...).
//!
//! An `mpi_f08` procedure has the `mpif.h` ABI (everything by reference, handles and statuses
//! laid out as INTEGERs) except that its `ierror` is OPTIONAL: NULL when absent. Each export
//! converts the Fortran arguments (handles, statuses, sentinels, 1-based indices, LOGICALs) and
//! calls the C export of the same function ([`exports`](super::exports)), so Fortran calls take
//! exactly the C path: `guard::call`, statistics, protocol handlers.
//!
//! Fortran-only symbols (`mpi_fortran_bottom_`, ...) are looked up with `dlsym`, never linked:
//! a cdylib binds every symbol at load time and a C-only application would fail to start.
//! No panic crosses the ABI: every entry point catches it and returns `MPI_ERR_INTERN` in
//! `ierror`.

#![allow(clippy::missing_safety_doc)]

use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::ffi::{errclass, Fint};

/// Runs a Fortran entry point's body: catches panics, stores the result in `ierr` when the
/// caller passed one (`mpi_f08`'s `ierror` is OPTIONAL: an absent argument is NULL).
fn run(ierr: *mut Fint, body: impl FnOnce() -> c_int) {
    let rc = catch_unwind(AssertUnwindSafe(body)).unwrap_or(errclass::ERR_INTERN);
    if !ierr.is_null() {
        // SAFETY: a non-null `ierror` is a Fortran INTEGER the caller passed by reference.
        unsafe { *ierr = rc };
    }
}

mod convert {
    //! Fortran <-> C argument conversions.

    use std::ffi::{c_int, c_void, CStr};
    use std::sync::OnceLock;

    use crate::ffi::mpi::{self, MPI_Comm, MPI_Datatype, MPI_Message, MPI_Request, MPI_Status};
    use crate::ffi::{consts, Fint};

    /// Fortran `MPI_STATUS_SIZE` (INTEGERs per status, also `TYPE(MPI_Status)`'s size): the size
    /// of the C `MPI_Status` in `int`s in both MPIs (Open MPI's `mpif-config.h` says 6, MPICH's
    /// `MPI_F_STATUS_SIZE` 5).
    pub const F_STATUS_SIZE: usize =
        std::mem::size_of::<MPI_Status>() / std::mem::size_of::<Fint>();
    #[cfg(sluice_mpi = "openmpi")]
    const _: () = assert!(F_STATUS_SIZE == 6);
    #[cfg(sluice_mpi = "mpich")]
    const _: () = assert!(F_STATUS_SIZE == mpi::MPI_F_STATUS_SIZE as usize);

    /// The symbols behind the Fortran sentinels: Open MPI's common blocks (shared by `mpif.h`,
    /// `use mpi` and `use mpi_f08`); MPICH's `mpi_f08` objects (sluice exports only `mpi_f08`
    /// procedures there).
    #[cfg(sluice_mpi = "openmpi")]
    const SYMBOLS: [&CStr; 4] = [
        c"mpi_fortran_bottom_",
        c"mpi_fortran_in_place_",
        c"mpi_fortran_status_ignore_",
        c"mpi_fortran_statuses_ignore_",
    ];
    #[cfg(sluice_mpi = "mpich")]
    const SYMBOLS: [&CStr; 4] = [
        c"MPIR_F08_MPI_BOTTOM",
        c"MPIR_F08_MPI_IN_PLACE",
        c"MPIR_F08_MPI_STATUS_IGNORE_OBJ",
        c"MPIR_F08_MPI_STATUSES_IGNORE_OBJ",
    ];

    /// Addresses of the Fortran sentinels (`MPI_BOTTOM`, ...), resolved once; `0` where the
    /// symbol does not exist.
    struct Sentinels {
        bottom: usize,
        in_place: usize,
        status_ignore: usize,
        statuses_ignore: usize,
    }

    /// Handle conversions: Open MPI's `PMPI_*_f2c`/`PMPI_*_c2f` functions; in MPICH they are
    /// cast macros (Fortran and C handles are the same integer), so they are written out here.
    #[cfg(sluice_mpi = "openmpi")]
    use mpi::{
        PMPI_Comm_c2f, PMPI_Comm_f2c, PMPI_Message_c2f, PMPI_Message_f2c, PMPI_Request_c2f,
        PMPI_Request_f2c, PMPI_Type_c2f, PMPI_Type_f2c,
    };
    #[cfg(sluice_mpi = "mpich")]
    use mpich_handles::*;
    #[cfg(sluice_mpi = "mpich")]
    #[allow(non_snake_case, clippy::missing_safety_doc)]
    mod mpich_handles {
        use crate::ffi::mpi::{MPI_Comm, MPI_Datatype, MPI_Message, MPI_Request};
        use crate::ffi::Fint;
        macro_rules! identity {
            ($($f2c:ident, $c2f:ident: $t:ty;)*) => {$(
                pub unsafe fn $f2c(h: Fint) -> $t { h }
                pub unsafe fn $c2f(h: $t) -> Fint { h }
            )*};
        }
        identity! {
            PMPI_Comm_f2c, PMPI_Comm_c2f: MPI_Comm;
            PMPI_Type_f2c, PMPI_Type_c2f: MPI_Datatype;
            PMPI_Request_f2c, PMPI_Request_c2f: MPI_Request;
            PMPI_Message_f2c, PMPI_Message_c2f: MPI_Message;
        }
    }

    fn lookup(name: &CStr) -> usize {
        // SAFETY: `name` is NUL-terminated; dlsym only reads the global symbol tables.
        unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) as usize }
    }

    fn sentinels() -> &'static Sentinels {
        static S: OnceLock<Sentinels> = OnceLock::new();
        S.get_or_init(|| {
            let [bottom, in_place, status_ignore, statuses_ignore] = SYMBOLS.map(lookup);
            Sentinels {
                bottom,
                in_place,
                status_ignore,
                statuses_ignore,
            }
        })
    }

    fn is(p: *const c_void, sentinel: usize) -> bool {
        sentinel != 0 && p as usize == sentinel
    }

    /// A buffer address: Fortran `MPI_BOTTOM` / `MPI_IN_PLACE` become the C sentinels.
    pub fn buffer(p: *mut c_void) -> *mut c_void {
        let s = sentinels();
        if is(p, s.bottom) {
            consts::bottom()
        } else if is(p, s.in_place) {
            consts::in_place()
        } else {
            p
        }
    }

    fn is_status_ignore(p: *mut Fint) -> bool {
        p == consts::f_status_ignore() || is(p.cast(), sentinels().status_ignore)
    }

    fn is_statuses_ignore(p: *mut Fint) -> bool {
        p == consts::f_statuses_ignore() || is(p.cast(), sentinels().statuses_ignore)
    }

    /// An INTEGER argument passed by reference.
    ///
    /// # Safety
    /// `p` points to a Fortran INTEGER.
    pub unsafe fn int(p: *const Fint) -> c_int {
        // SAFETY: caller's contract.
        unsafe { *p }
    }

    /// # Safety
    /// `p` points to a Fortran communicator handle.
    pub unsafe fn comm_f2c(p: *const Fint) -> MPI_Comm {
        // SAFETY: caller's contract; f2c accepts any value (invalid ones give an invalid handle
        // that the C call then reports).
        unsafe { PMPI_Comm_f2c(*p) }
    }

    /// # Safety
    /// `p` points to a Fortran datatype handle.
    pub unsafe fn type_f2c(p: *const Fint) -> MPI_Datatype {
        // SAFETY: as for `comm_f2c`.
        unsafe { PMPI_Type_f2c(*p) }
    }

    /// # Safety
    /// `p` points to a Fortran request handle.
    pub unsafe fn request_f2c(p: *const Fint) -> MPI_Request {
        // SAFETY: as for `comm_f2c`.
        unsafe { PMPI_Request_f2c(*p) }
    }

    /// # Safety
    /// `p` points to a Fortran message handle.
    pub unsafe fn message_f2c(p: *const Fint) -> MPI_Message {
        // SAFETY: as for `comm_f2c`.
        unsafe { PMPI_Message_f2c(*p) }
    }

    /// # Safety
    /// `p` points to a Fortran INTEGER handle to overwrite.
    pub unsafe fn set_comm(p: *mut Fint, c: MPI_Comm) {
        // SAFETY: caller's contract; c2f only reads the handle.
        unsafe { *p = PMPI_Comm_c2f(c) }
    }

    /// # Safety
    /// As `set_comm`.
    pub unsafe fn set_dtype(p: *mut Fint, t: MPI_Datatype) {
        // SAFETY: as for `set_comm`.
        unsafe { *p = PMPI_Type_c2f(t) }
    }

    /// # Safety
    /// As `set_comm`.
    pub unsafe fn set_request(p: *mut Fint, r: MPI_Request) {
        // SAFETY: as for `set_comm`.
        unsafe { *p = PMPI_Request_c2f(r) }
    }

    /// # Safety
    /// As `set_comm`.
    pub unsafe fn set_message(p: *mut Fint, m: MPI_Message) {
        // SAFETY: as for `set_comm`.
        unsafe { *p = PMPI_Message_c2f(m) }
    }

    /// Writes a Fortran LOGICAL (gfortran: `.TRUE.` is 1).
    ///
    /// # Safety
    /// `p` points to a default-kind Fortran LOGICAL.
    pub unsafe fn set_logical(p: *mut Fint, c_flag: c_int) {
        // SAFETY: caller's contract.
        unsafe { *p = Fint::from(c_flag != 0) }
    }

    /// A C index (0-based) as Fortran sees it (1-based); `MPI_UNDEFINED` stays.
    pub fn fortran_index(i: c_int) -> c_int {
        if i == mpi::MPI_UNDEFINED {
            i
        } else {
            i + 1
        }
    }

    /// Converts the first `n` C indices at `p` to Fortran indices in place.
    ///
    /// # Safety
    /// `p` points to at least `n` INTEGERs when `n > 0`.
    pub unsafe fn fortran_indices(p: *mut Fint, n: c_int) {
        for k in 0..usize::try_from(n).unwrap_or(0) {
            // SAFETY: caller's contract, `k < n`.
            unsafe { *p.add(k) = fortran_index(*p.add(k)) };
        }
    }

    /// Number of elements for an array argument (negative counts: none; the MPI reports them).
    fn len(n: c_int) -> usize {
        usize::try_from(n).unwrap_or(0)
    }

    fn zeroed_status() -> MPI_Status {
        // SAFETY: MPI_Status is a plain C struct of integers; all-zero is a valid value.
        unsafe { std::mem::zeroed() }
    }

    /// An output status: a C status to pass to the call, copied back to the Fortran status
    /// unless the caller passed `MPI_STATUS_IGNORE`.
    pub struct StatusOut {
        fortran: *mut Fint,
        c: Option<MPI_Status>,
    }

    impl StatusOut {
        /// `fortran` is the caller's status argument (a status or `MPI_STATUS_IGNORE`).
        pub fn new(fortran: *mut Fint) -> Self {
            let c = (!is_status_ignore(fortran)).then(zeroed_status);
            Self { fortran, c }
        }

        /// The C argument: this status, or C `MPI_STATUS_IGNORE`.
        pub fn c(&mut self) -> *mut MPI_Status {
            self.c
                .as_mut()
                .map_or_else(consts::status_ignore, |s| s as *mut _)
        }

        /// Copies the C status to the Fortran one.
        ///
        /// # Safety
        /// The Fortran status is `MPI_STATUS_SIZE` writable INTEGERs.
        pub unsafe fn write_back(&self) {
            if let Some(s) = &self.c {
                // SAFETY: caller's contract; `s` is a valid C status.
                unsafe { mpi::PMPI_Status_c2f(s, self.fortran) };
            }
        }
    }

    /// A Fortran status read as a C status (input arguments: `MPI_Get_count`, ...).
    ///
    /// # Safety
    /// `p` points to `MPI_STATUS_SIZE` INTEGERs.
    pub unsafe fn status_in(p: *const Fint) -> MPI_Status {
        let mut s = zeroed_status();
        // SAFETY: caller's contract; `s` is a writable C status.
        unsafe { mpi::PMPI_Status_f2c(p, &mut s) };
        s
    }

    /// An output array of statuses (`MPI_Waitall`, ...), or `MPI_STATUSES_IGNORE`.
    pub struct StatusesOut {
        fortran: *mut Fint,
        c: Option<Vec<MPI_Status>>,
    }

    impl StatusesOut {
        /// `fortran` is the caller's array of `n` statuses or `MPI_STATUSES_IGNORE`.
        pub fn new(fortran: *mut Fint, n: c_int) -> Self {
            let c = (!is_statuses_ignore(fortran)).then(|| vec![zeroed_status(); len(n)]);
            Self { fortran, c }
        }

        /// The C argument: these statuses, or C `MPI_STATUSES_IGNORE`.
        pub fn c(&mut self) -> *mut MPI_Status {
            self.c
                .as_mut()
                .map_or_else(consts::statuses_ignore, |v| v.as_mut_ptr())
        }

        /// Copies the first `n` C statuses back (all of them when `n` exceeds the array).
        ///
        /// # Safety
        /// The Fortran array holds as many statuses as were given to `new`.
        pub unsafe fn write_back(&self, n: c_int) {
            let Some(v) = &self.c else { return };
            for (k, s) in v.iter().take(len(n)).enumerate() {
                // SAFETY: caller's contract: status `k` of the Fortran array is writable.
                unsafe { mpi::PMPI_Status_c2f(s, self.fortran.add(k * F_STATUS_SIZE)) };
            }
        }
    }

    /// An in/out array of requests: converted to C for the call, back to Fortran after it
    /// (completed requests become `MPI_REQUEST_NULL`).
    pub struct Requests {
        fortran: *mut Fint,
        c: Vec<MPI_Request>,
    }

    impl Requests {
        /// # Safety
        /// `fortran` points to `n` request handles when `n > 0`.
        pub unsafe fn new(fortran: *mut Fint, n: c_int) -> Self {
            // SAFETY: caller's contract, `k < n`.
            let c = (0..len(n))
                .map(|k| unsafe { request_f2c(fortran.add(k)) })
                .collect();
            Self { fortran, c }
        }

        /// The C argument.
        pub fn c(&mut self) -> *mut MPI_Request {
            self.c.as_mut_ptr()
        }

        /// # Safety
        /// As for `new`.
        pub unsafe fn write_back(&self) {
            for (k, &r) in self.c.iter().enumerate() {
                // SAFETY: caller's contract, `k < n`.
                unsafe { set_request(self.fortran.add(k), r) };
            }
        }
    }
}

// Fortran signatures are fixed by the MPI standard.
#[allow(non_snake_case, clippy::too_many_arguments)]
mod bindings {
    //! The Fortran bindings and the flavor-dependent sets of names they are exported under
    //! (see the module docs of `intercept::fortran`).

    use std::ffi::c_void;
    use std::ptr::null_mut;

    use super::convert::*;
    use super::run;
    use crate::ffi::mpi::MPI_Count;
    use crate::ffi::{consts, Fint};
    use crate::intercept::exports as c;

    /// Exports one Rust implementation under several symbol names.
    macro_rules! aliases {
        ($target:ident, $params:tt, $args:tt, { $($alias:ident),* }) => {$(
            #[doc = concat!("Fortran entry point `", stringify!($alias), "`.")]
            #[no_mangle]
            pub unsafe extern "C" fn $alias $params {
                // SAFETY: an alias of the implementation, with its contract.
                unsafe { $target $args }
            }
        )*};
    }

    /// The sets of exported names for the binding of `$name` (`mpi_send`), given as a list
    /// (`[ompi, mpich_f08]`) or one at a time:
    /// - `ompi`: Open MPI's `mpi_send_`, `mpi_send__`, `mpi_send`, `MPI_SEND`, `ompi_send_f`;
    /// - `ompi_f08`: Open MPI's `mpi_f08` procedure `mpi_send_f08_`;
    /// - `mpich_f08`: MPICH's `mpi_f08` procedure `mpi_send_f08_`.
    macro_rules! export_set {
        ([], $($rest:tt)*) => {};
        ([$set:ident $(, $more:ident)*], $name:ident, $($rest:tt)*) => {
            export_set!($set, $name, $($rest)*);
            export_set!([$($more),*], $name, $($rest)*);
        };
        (ompi, $name:ident, $($rest:tt)*) => { paste::paste! {
            #[cfg(sluice_mpi = "openmpi")]
            aliases!($($rest)*, {
                [<$name _>], [<$name __>], $name, [<$name:upper>], [<o $name _f>]
            });
        }};
        (ompi_f08, $name:ident, $($rest:tt)*) => { paste::paste! {
            #[cfg(sluice_mpi = "openmpi")]
            aliases!($($rest)*, { [<$name _f08_>] });
        }};
        (mpich_f08, $name:ident, $($rest:tt)*) => { paste::paste! {
            #[cfg(sluice_mpi = "mpich")]
            aliases!($($rest)*, { [<$name _f08_>] });
        }};
    }

    /// Defines one Fortran binding: `fn mpi_x [sets] (args) { body }` becomes `mpi_x_impl`
    /// (the body under [`run`], plus the trailing `ierr`), exported under each set of names
    /// (see `export_set`).
    macro_rules! fortran {
        ($(
            fn $name:ident [$($set:ident),*] ( $($arg:ident : $ty:ty),* $(,)? ) $body:block
        )*) => { paste::paste! {$(
            /// # Safety
            /// The Fortran binding's contract: every argument is a valid reference.
            #[allow(dead_code)] // not every flavor exports every binding
            unsafe fn [<$name _impl>]($($arg: $ty,)* ierr: *mut Fint) {
                run(ierr, || $body)
            }
            export_set!([$($set),*], $name, [<$name _impl>], ($($arg: $ty,)* ierr: *mut Fint),
                ($($arg,)* ierr));
        )*}};
    }

    /// Blocking sends: `(buf, count, datatype, dest, tag, comm)`.
    macro_rules! blocking_send {
        ($($name:ident => $c:ident;)*) => {
            fortran! {$(
                fn $name [ompi] (
                    buf: *mut c_void, count: *mut Fint, datatype: *mut Fint, dest: *mut Fint,
                    tag: *mut Fint, comm: *mut Fint,
                ) {
                    // SAFETY: Fortran passes every argument by reference; converted handles
                    // and the buffer go to the C binding of the same function.
                    unsafe {
                        c::$c(buffer(buf), int(count), type_f2c(datatype), int(dest), int(tag),
                            comm_f2c(comm))
                    }
                }
            )*}
        };
    }

    /// Calls that create a request: `(buf, count, datatype, peer, tag, comm, request)`
    /// (nonblocking sends and receives, persistent inits).
    macro_rules! request_op {
        ($($name:ident => $c:ident;)*) => {
            fortran! {$(
                fn $name [ompi] (
                    buf: *mut c_void, count: *mut Fint, datatype: *mut Fint, peer: *mut Fint,
                    tag: *mut Fint, comm: *mut Fint, request: *mut Fint,
                ) {
                    let mut r = consts::request_null();
                    // SAFETY: Fortran references; the C call writes one request.
                    unsafe {
                        let rc = c::$c(buffer(buf), int(count), type_f2c(datatype), int(peer),
                            int(tag), comm_f2c(comm), &mut r);
                        set_request(request, r);
                        rc
                    }
                }
            )*}
        };
    }

    // ---- environment -------------------------------------------------------------------------
    fortran! {
        fn mpi_init [ompi, mpich_f08] () {
            // SAFETY: MPI_Init accepts NULL argc/argv.
            unsafe { c::MPI_Init(null_mut(), null_mut()) }
        }
        fn mpi_init_thread [ompi, mpich_f08] (required: *mut Fint, provided: *mut Fint) {
            // SAFETY: Fortran references; `provided` is a writable INTEGER.
            unsafe { c::MPI_Init_thread(null_mut(), null_mut(), int(required), provided) }
        }
        fn mpi_finalize [ompi, mpich_f08] () {
            // SAFETY: no arguments.
            unsafe { c::MPI_Finalize() }
        }
    }

    // ---- point-to-point ----------------------------------------------------------------------
    blocking_send! {
        mpi_send => MPI_Send;
        mpi_bsend => MPI_Bsend;
        mpi_ssend => MPI_Ssend;
        mpi_rsend => MPI_Rsend;
    }

    request_op! {
        mpi_isend => MPI_Isend;
        mpi_ibsend => MPI_Ibsend;
        mpi_issend => MPI_Issend;
        mpi_irsend => MPI_Irsend;
        mpi_irecv => MPI_Irecv;
        mpi_send_init => MPI_Send_init;
        mpi_bsend_init => MPI_Bsend_init;
        mpi_ssend_init => MPI_Ssend_init;
        mpi_rsend_init => MPI_Rsend_init;
        mpi_recv_init => MPI_Recv_init;
    }

    fortran! {
        fn mpi_recv [ompi] (
            buf: *mut c_void, count: *mut Fint, datatype: *mut Fint, source: *mut Fint,
            tag: *mut Fint, comm: *mut Fint, status: *mut Fint,
        ) {
            let mut st = StatusOut::new(status);
            // SAFETY: Fortran references; `st` converts the status.
            unsafe {
                let rc = c::MPI_Recv(buffer(buf), int(count), type_f2c(datatype), int(source),
                    int(tag), comm_f2c(comm), st.c());
                st.write_back();
                rc
            }
        }
        fn mpi_sendrecv [ompi] (
            sendbuf: *mut c_void, sendcount: *mut Fint, sendtype: *mut Fint, dest: *mut Fint,
            sendtag: *mut Fint, recvbuf: *mut c_void, recvcount: *mut Fint, recvtype: *mut Fint,
            source: *mut Fint, recvtag: *mut Fint, comm: *mut Fint, status: *mut Fint,
        ) {
            let mut st = StatusOut::new(status);
            // SAFETY: Fortran references; `st` converts the status.
            unsafe {
                let rc = c::MPI_Sendrecv(buffer(sendbuf), int(sendcount), type_f2c(sendtype),
                    int(dest), int(sendtag), buffer(recvbuf), int(recvcount), type_f2c(recvtype),
                    int(source), int(recvtag), comm_f2c(comm), st.c());
                st.write_back();
                rc
            }
        }
        fn mpi_sendrecv_replace [ompi] (
            buf: *mut c_void, count: *mut Fint, datatype: *mut Fint, dest: *mut Fint,
            sendtag: *mut Fint, source: *mut Fint, recvtag: *mut Fint, comm: *mut Fint,
            status: *mut Fint,
        ) {
            let mut st = StatusOut::new(status);
            // SAFETY: Fortran references; `st` converts the status.
            unsafe {
                let rc = c::MPI_Sendrecv_replace(buffer(buf), int(count), type_f2c(datatype),
                    int(dest), int(sendtag), int(source), int(recvtag), comm_f2c(comm), st.c());
                st.write_back();
                rc
            }
        }

        // ---- persistent ----------------------------------------------------------------------
        fn mpi_start [ompi, mpich_f08] (request: *mut Fint) {
            // SAFETY: Fortran reference to one request, converted both ways.
            unsafe {
                let mut r = request_f2c(request);
                let rc = c::MPI_Start(&mut r);
                set_request(request, r);
                rc
            }
        }
        fn mpi_startall [ompi, mpich_f08] (count: *mut Fint, requests: *mut Fint) {
            // SAFETY: Fortran references; `requests` holds `count` handles.
            unsafe {
                let mut reqs = Requests::new(requests, int(count));
                let rc = c::MPI_Startall(int(count), reqs.c());
                reqs.write_back();
                rc
            }
        }

        // ---- probes and matched receives -----------------------------------------------------
        fn mpi_probe [ompi, mpich_f08] (
            source: *mut Fint, tag: *mut Fint, comm: *mut Fint, status: *mut Fint,
        ) {
            let mut st = StatusOut::new(status);
            // SAFETY: Fortran references; `st` converts the status.
            unsafe {
                let rc = c::MPI_Probe(int(source), int(tag), comm_f2c(comm), st.c());
                st.write_back();
                rc
            }
        }
        fn mpi_iprobe [ompi, ompi_f08, mpich_f08] (
            source: *mut Fint, tag: *mut Fint, comm: *mut Fint, flag: *mut Fint, status: *mut Fint,
        ) {
            let mut st = StatusOut::new(status);
            let mut f = 0;
            // SAFETY: Fortran references; `flag` is a LOGICAL.
            unsafe {
                let rc = c::MPI_Iprobe(int(source), int(tag), comm_f2c(comm), &mut f, st.c());
                set_logical(flag, f);
                st.write_back();
                rc
            }
        }
        fn mpi_mprobe [ompi, mpich_f08] (
            source: *mut Fint, tag: *mut Fint, comm: *mut Fint, message: *mut Fint,
            status: *mut Fint,
        ) {
            let mut st = StatusOut::new(status);
            let mut m = consts::message_null();
            // SAFETY: Fortran references; the message handle is converted back.
            unsafe {
                let rc = c::MPI_Mprobe(int(source), int(tag), comm_f2c(comm), &mut m, st.c());
                set_message(message, m);
                st.write_back();
                rc
            }
        }
        fn mpi_improbe [ompi, ompi_f08, mpich_f08] (
            source: *mut Fint, tag: *mut Fint, comm: *mut Fint, flag: *mut Fint, message: *mut Fint,
            status: *mut Fint,
        ) {
            let mut st = StatusOut::new(status);
            let mut m = consts::message_null();
            let mut f = 0;
            // SAFETY: Fortran references; `flag` is a LOGICAL.
            unsafe {
                let rc = c::MPI_Improbe(int(source), int(tag), comm_f2c(comm), &mut f, &mut m,
                    st.c());
                set_logical(flag, f);
                if f != 0 {
                    set_message(message, m);
                }
                st.write_back();
                rc
            }
        }
        fn mpi_mrecv [ompi] (
            buf: *mut c_void, count: *mut Fint, datatype: *mut Fint, message: *mut Fint,
            status: *mut Fint,
        ) {
            let mut st = StatusOut::new(status);
            // SAFETY: Fortran references; the message handle is converted both ways.
            unsafe {
                let mut m = message_f2c(message);
                let rc = c::MPI_Mrecv(buffer(buf), int(count), type_f2c(datatype), &mut m, st.c());
                set_message(message, m);
                st.write_back();
                rc
            }
        }
        fn mpi_imrecv [ompi] (
            buf: *mut c_void, count: *mut Fint, datatype: *mut Fint, message: *mut Fint,
            request: *mut Fint,
        ) {
            let mut r = consts::request_null();
            // SAFETY: Fortran references; message in/out, one request out.
            unsafe {
                let mut m = message_f2c(message);
                let rc = c::MPI_Imrecv(buffer(buf), int(count), type_f2c(datatype), &mut m, &mut r);
                set_message(message, m);
                set_request(request, r);
                rc
            }
        }

        // ---- completion ----------------------------------------------------------------------
        fn mpi_wait [ompi, mpich_f08] (request: *mut Fint, status: *mut Fint) {
            let mut st = StatusOut::new(status);
            // SAFETY: Fortran references; request in/out, status out.
            unsafe {
                let mut r = request_f2c(request);
                let rc = c::MPI_Wait(&mut r, st.c());
                set_request(request, r);
                st.write_back();
                rc
            }
        }
        fn mpi_waitall [ompi, mpich_f08] (
            count: *mut Fint, requests: *mut Fint, statuses: *mut Fint,
        ) {
            // SAFETY: Fortran references; arrays of `count` requests and statuses.
            unsafe {
                let n = int(count);
                let mut reqs = Requests::new(requests, n);
                let mut sts = StatusesOut::new(statuses, n);
                let rc = c::MPI_Waitall(n, reqs.c(), sts.c());
                reqs.write_back();
                sts.write_back(n);
                rc
            }
        }
        fn mpi_waitany [ompi, mpich_f08] (
            count: *mut Fint, requests: *mut Fint, index: *mut Fint, status: *mut Fint,
        ) {
            let mut st = StatusOut::new(status);
            // SAFETY: Fortran references; `index` becomes 1-based.
            unsafe {
                let n = int(count);
                let mut reqs = Requests::new(requests, n);
                let rc = c::MPI_Waitany(n, reqs.c(), index, st.c());
                reqs.write_back();
                *index = fortran_index(*index);
                st.write_back();
                rc
            }
        }
        fn mpi_waitsome [ompi, mpich_f08] (
            incount: *mut Fint, requests: *mut Fint, outcount: *mut Fint, indices: *mut Fint,
            statuses: *mut Fint,
        ) {
            // SAFETY: Fortran references; `indices` and `statuses` hold `incount` entries, the
            // first `outcount` are written.
            unsafe {
                let n = int(incount);
                let mut reqs = Requests::new(requests, n);
                let mut sts = StatusesOut::new(statuses, n);
                let rc = c::MPI_Waitsome(n, reqs.c(), outcount, indices, sts.c());
                reqs.write_back();
                fortran_indices(indices, *outcount);
                sts.write_back(*outcount);
                rc
            }
        }
        fn mpi_test [ompi, ompi_f08, mpich_f08] (
            request: *mut Fint, flag: *mut Fint, status: *mut Fint,
        ) {
            let mut st = StatusOut::new(status);
            let mut f = 0;
            // SAFETY: Fortran references; request in/out, `flag` a LOGICAL.
            unsafe {
                let mut r = request_f2c(request);
                let rc = c::MPI_Test(&mut r, &mut f, st.c());
                set_request(request, r);
                set_logical(flag, f);
                st.write_back();
                rc
            }
        }
        fn mpi_testall [ompi, ompi_f08, mpich_f08] (
            count: *mut Fint, requests: *mut Fint, flag: *mut Fint, statuses: *mut Fint,
        ) {
            let mut f = 0;
            // SAFETY: Fortran references; arrays of `count` requests and statuses.
            unsafe {
                let n = int(count);
                let mut reqs = Requests::new(requests, n);
                let mut sts = StatusesOut::new(statuses, n);
                let rc = c::MPI_Testall(n, reqs.c(), &mut f, sts.c());
                reqs.write_back();
                set_logical(flag, f);
                sts.write_back(n);
                rc
            }
        }
        fn mpi_testany [ompi, ompi_f08, mpich_f08] (
            count: *mut Fint, requests: *mut Fint, index: *mut Fint, flag: *mut Fint,
            status: *mut Fint,
        ) {
            let mut st = StatusOut::new(status);
            let mut f = 0;
            // SAFETY: Fortran references; `index` becomes 1-based, `flag` a LOGICAL.
            unsafe {
                let n = int(count);
                let mut reqs = Requests::new(requests, n);
                let rc = c::MPI_Testany(n, reqs.c(), index, &mut f, st.c());
                reqs.write_back();
                *index = fortran_index(*index);
                set_logical(flag, f);
                st.write_back();
                rc
            }
        }
        fn mpi_testsome [ompi, ompi_f08, mpich_f08] (
            incount: *mut Fint, requests: *mut Fint, outcount: *mut Fint, indices: *mut Fint,
            statuses: *mut Fint,
        ) {
            // SAFETY: as for mpi_waitsome.
            unsafe {
                let n = int(incount);
                let mut reqs = Requests::new(requests, n);
                let mut sts = StatusesOut::new(statuses, n);
                let rc = c::MPI_Testsome(n, reqs.c(), outcount, indices, sts.c());
                reqs.write_back();
                fortran_indices(indices, *outcount);
                sts.write_back(*outcount);
                rc
            }
        }
        fn mpi_request_free [ompi, mpich_f08] (request: *mut Fint) {
            // SAFETY: Fortran reference to one request, set to MPI_REQUEST_NULL.
            unsafe {
                let mut r = request_f2c(request);
                let rc = c::MPI_Request_free(&mut r);
                set_request(request, r);
                rc
            }
        }
        fn mpi_request_get_status [ompi, ompi_f08, mpich_f08] (
            request: *mut Fint, flag: *mut Fint, status: *mut Fint,
        ) {
            let mut st = StatusOut::new(status);
            let mut f = 0;
            // SAFETY: Fortran references; the request is only read.
            unsafe {
                let rc = c::MPI_Request_get_status(request_f2c(request), &mut f, st.c());
                set_logical(flag, f);
                st.write_back();
                rc
            }
        }
        fn mpi_cancel [ompi, mpich_f08] (request: *mut Fint) {
            // SAFETY: Fortran reference to one request (not modified by MPI_Cancel).
            unsafe {
                let mut r = request_f2c(request);
                c::MPI_Cancel(&mut r)
            }
        }
        fn mpi_get_count [ompi, mpich_f08] (
            status: *mut Fint, datatype: *mut Fint, count: *mut Fint,
        ) {
            // SAFETY: Fortran references; `count` is a writable INTEGER.
            unsafe { c::MPI_Get_count(&status_in(status), type_f2c(datatype), count) }
        }
        fn mpi_get_elements [ompi, mpich_f08] (
            status: *mut Fint, datatype: *mut Fint, count: *mut Fint,
        ) {
            // SAFETY: as for mpi_get_count.
            unsafe { c::MPI_Get_elements(&status_in(status), type_f2c(datatype), count) }
        }
        fn mpi_get_elements_x [ompi, mpich_f08] (
            status: *mut Fint, datatype: *mut Fint, count: *mut MPI_Count,
        ) {
            // SAFETY: as for mpi_get_count; `count` is INTEGER(KIND=MPI_COUNT_KIND).
            unsafe { c::MPI_Get_elements_x(&status_in(status), type_f2c(datatype), count) }
        }

        // ---- datatypes and packing -----------------------------------------------------------
        fn mpi_type_commit [ompi, mpich_f08] (datatype: *mut Fint) {
            // SAFETY: Fortran reference to one datatype handle, converted both ways.
            unsafe {
                let mut t = type_f2c(datatype);
                let rc = c::MPI_Type_commit(&mut t);
                set_dtype(datatype, t);
                rc
            }
        }
        fn mpi_type_free [ompi, mpich_f08] (datatype: *mut Fint) {
            // SAFETY: as for mpi_type_commit.
            unsafe {
                let mut t = type_f2c(datatype);
                let rc = c::MPI_Type_free(&mut t);
                set_dtype(datatype, t);
                rc
            }
        }
        fn mpi_type_dup [ompi, mpich_f08] (oldtype: *mut Fint, newtype: *mut Fint) {
            let mut t = consts::datatype_null();
            // SAFETY: Fortran references; one datatype handle out.
            unsafe {
                let rc = c::MPI_Type_dup(type_f2c(oldtype), &mut t);
                set_dtype(newtype, t);
                rc
            }
        }
        fn mpi_pack [ompi] (
            inbuf: *mut c_void, incount: *mut Fint, datatype: *mut Fint, outbuf: *mut c_void,
            outsize: *mut Fint, position: *mut Fint, comm: *mut Fint,
        ) {
            // SAFETY: Fortran references; `position` is an in/out INTEGER.
            unsafe {
                c::MPI_Pack(buffer(inbuf), int(incount), type_f2c(datatype), outbuf, int(outsize),
                    position, comm_f2c(comm))
            }
        }
        fn mpi_unpack [ompi] (
            inbuf: *mut c_void, insize: *mut Fint, position: *mut Fint, outbuf: *mut c_void,
            outcount: *mut Fint, datatype: *mut Fint, comm: *mut Fint,
        ) {
            // SAFETY: Fortran references; `position` is an in/out INTEGER.
            unsafe {
                c::MPI_Unpack(inbuf, int(insize), position, buffer(outbuf), int(outcount),
                    type_f2c(datatype), comm_f2c(comm))
            }
        }
        fn mpi_pack_size [ompi, mpich_f08] (
            incount: *mut Fint, datatype: *mut Fint, comm: *mut Fint, size: *mut Fint,
        ) {
            // SAFETY: Fortran references; `size` is a writable INTEGER.
            unsafe { c::MPI_Pack_size(int(incount), type_f2c(datatype), comm_f2c(comm), size) }
        }

        // ---- communicators -------------------------------------------------------------------
        fn mpi_comm_dup [ompi, mpich_f08] (comm: *mut Fint, newcomm: *mut Fint) {
            let mut nc = consts::comm_null();
            // SAFETY: Fortran references; one communicator handle out.
            unsafe {
                let rc = c::MPI_Comm_dup(comm_f2c(comm), &mut nc);
                set_comm(newcomm, nc);
                rc
            }
        }
        fn mpi_comm_free [ompi, mpich_f08] (comm: *mut Fint) {
            // SAFETY: Fortran reference to one communicator, set to MPI_COMM_NULL.
            unsafe {
                let mut cm = comm_f2c(comm);
                let rc = c::MPI_Comm_free(&mut cm);
                set_comm(comm, cm);
                rc
            }
        }
    }
}
