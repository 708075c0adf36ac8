//! Fortran <-> C argument conversions.

use std::ffi::{c_int, c_void, CStr};
use std::sync::OnceLock;

use crate::ffi::mpi::{self, MPI_Comm, MPI_Datatype, MPI_Message, MPI_Request, MPI_Status};
use crate::ffi::{consts, Fint};

/// Fortran `MPI_STATUS_SIZE` (INTEGERs per status, also `TYPE(MPI_Status)`'s size): the size
/// of the C `MPI_Status` in `int`s in both MPIs (Open MPI's `mpif-config.h` says 6, MPICH's
/// `MPI_F_STATUS_SIZE` 5).
pub const F_STATUS_SIZE: usize = std::mem::size_of::<MPI_Status>() / std::mem::size_of::<Fint>();
#[cfg(sluice_mpi = "openmpi")]
const _: () = assert!(F_STATUS_SIZE == 6);
#[cfg(sluice_mpi = "mpich")]
const _: () = assert!(F_STATUS_SIZE == mpi::MPI_F_STATUS_SIZE as usize);

/// The symbols behind the Fortran sentinels: Open MPI's common blocks (shared by `mpif.h`,
/// `use mpi` and `use mpi_f08`); MPICH's `mpi_f08` objects (sluice exports only `mpi_f08`
/// procedures there).
#[cfg(sluice_mpi = "openmpi")]
const SYMBOLS: [&CStr; 4] =
    [c"mpi_fortran_bottom_", c"mpi_fortran_in_place_", c"mpi_fortran_status_ignore_", c"mpi_fortran_statuses_ignore_"];
#[cfg(sluice_mpi = "mpich")]
const SYMBOLS: [&CStr; 4] =
    [c"MPIR_F08_MPI_BOTTOM", c"MPIR_F08_MPI_IN_PLACE", c"MPIR_F08_MPI_STATUS_IGNORE_OBJ", c"MPIR_F08_MPI_STATUSES_IGNORE_OBJ"];

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
    PMPI_Comm_c2f, PMPI_Comm_f2c, PMPI_Info_f2c, PMPI_Message_c2f, PMPI_Message_f2c, PMPI_Request_c2f, PMPI_Request_f2c, PMPI_Type_c2f,
    PMPI_Type_f2c,
};
#[cfg(sluice_mpi = "mpich")]
use mpich_handles::*;
#[cfg(sluice_mpi = "mpich")]
#[allow(non_snake_case, clippy::missing_safety_doc)]
mod mpich_handles {
    use crate::ffi::mpi::{MPI_Comm, MPI_Datatype, MPI_Info, MPI_Message, MPI_Request};
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
        PMPI_Info_f2c, _info_c2f: MPI_Info;
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
        Sentinels { bottom, in_place, status_ignore, statuses_ignore }
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
/// `p` points to a Fortran info handle.
pub unsafe fn info_f2c(p: *const Fint) -> mpi::MPI_Info {
    // SAFETY: caller's contract; as `comm_f2c`.
    unsafe { PMPI_Info_f2c(*p) }
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
/// unless the caller passed `MPI_STATUS_IGNORE`. The C status starts as a copy of the Fortran
/// one, so the fields the call leaves alone keep the caller's values, as with the MPI's own
/// Fortran bindings (which hand the Fortran array to the C call): a probe or a single-request
/// completion does not set `MPI_ERROR`, and programs check that it does not.
pub struct StatusOut {
    fortran: *mut Fint,
    c: Option<MPI_Status>,
    loaded: bool,
}

impl StatusOut {
    /// `fortran` is the caller's status argument (a status or `MPI_STATUS_IGNORE`).
    pub fn new(fortran: *mut Fint) -> Self {
        let c = (!is_status_ignore(fortran)).then(zeroed_status);
        Self { fortran, c, loaded: false }
    }

    /// The C argument: this status (holding the Fortran status's values the first time), or
    /// C `MPI_STATUS_IGNORE`.
    ///
    /// # Safety
    /// The Fortran status is `MPI_STATUS_SIZE` readable INTEGERs.
    pub unsafe fn c(&mut self) -> *mut MPI_Status {
        let Some(s) = self.c.as_mut() else { return consts::status_ignore() };
        if !self.loaded {
            self.loaded = true;
            // SAFETY: caller's contract; `s` is a writable C status.
            unsafe { mpi::PMPI_Status_f2c(self.fortran, s) };
        }
        s
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

/// An output array of statuses (`MPI_Waitall`, ...), or `MPI_STATUSES_IGNORE`; like
/// [`StatusOut`], the C statuses start as copies of the Fortran ones.
pub struct StatusesOut {
    fortran: *mut Fint,
    c: Option<Vec<MPI_Status>>,
    loaded: bool,
}

impl StatusesOut {
    /// `fortran` is the caller's array of `n` statuses or `MPI_STATUSES_IGNORE`.
    pub fn new(fortran: *mut Fint, n: c_int) -> Self {
        let c = (!is_statuses_ignore(fortran)).then(|| vec![zeroed_status(); len(n)]);
        Self { fortran, c, loaded: false }
    }

    /// The C argument: these statuses (holding the Fortran statuses' values the first time),
    /// or C `MPI_STATUSES_IGNORE`.
    ///
    /// # Safety
    /// The Fortran array holds as many readable statuses as were given to `new`.
    pub unsafe fn c(&mut self) -> *mut MPI_Status {
        let Some(v) = self.c.as_mut() else { return consts::statuses_ignore() };
        if !self.loaded {
            self.loaded = true;
            for (k, s) in v.iter_mut().enumerate() {
                // SAFETY: caller's contract: status `k` of the Fortran array is readable.
                unsafe { mpi::PMPI_Status_f2c(self.fortran.add(k * F_STATUS_SIZE), s) };
            }
        }
        v.as_mut_ptr()
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
        let c = (0..len(n)).map(|k| unsafe { request_f2c(fortran.add(k)) }).collect();
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

/// Converts the first `n` Fortran LOGICALs at `p` to C ints (any nonzero value is `.TRUE.`, as
/// Open MPI's own bindings read them); empty for a non-positive `n`.
///
/// # Safety
/// `p` points to at least `n` LOGICALs when `n > 0`.
pub unsafe fn logicals(p: *const Fint, n: c_int) -> Vec<c_int> {
    (0..usize::try_from(n).unwrap_or(0))
        // SAFETY: caller's contract, `k < n`.
        .map(|k| c_int::from(unsafe { *p.add(k) } != 0))
        .collect()
}

/// A LOGICAL passed by reference as a C flag.
///
/// # Safety
/// `p` points to a Fortran LOGICAL.
pub unsafe fn logical(p: *const Fint) -> c_int {
    // SAFETY: caller's contract.
    c_int::from(unsafe { *p } != 0)
}

/// A weights array: Fortran's `MPI_UNWEIGHTED` and `MPI_WEIGHTS_EMPTY` become the C sentinels
/// (Open MPI: its common blocks; MPICH: its `mpi_f08` module's constants, the only MPICH
/// binding sluice exports these calls for).
pub fn weights(p: *const Fint) -> *const c_int {
    #[cfg(sluice_mpi = "openmpi")]
    const NAMES: [&CStr; 2] = [c"mpi_fortran_unweighted_", c"mpi_fortran_weights_empty_"];
    #[cfg(sluice_mpi = "mpich")]
    const NAMES: [&CStr; 2] = [c"__mpi_f08_link_constants_MOD_mpi_unweighted", c"__mpi_f08_link_constants_MOD_mpi_weights_empty"];
    static S: OnceLock<[usize; 2]> = OnceLock::new();
    let [unweighted, empty] = *S.get_or_init(|| NAMES.map(lookup));
    if is(p.cast(), unweighted) {
        consts::unweighted()
    } else if is(p.cast(), empty) {
        consts::weights_empty()
    } else {
        p
    }
}
