//! Build script: pick the MPI flavor, run bindgen over its `mpi.h`, compile the C accessors.
//!
//! One `libsluice.so` exists per MPI ABI (Open MPI handles are pointers, MPICH handles are
//! integers, `MPI_STATUS_IGNORE` differs), so the flavor is fixed at build time:
//! `SLUICE_MPI=openmpi|mpich`, default: whatever `mpicc` is.

use std::env;
use std::path::PathBuf;
use std::process::Command;

/// What the build needs to know about one MPI installation.
struct Flavor {
    name: &'static str,
    include_dirs: Vec<String>,
    link_dirs: Vec<String>,
    libs: Vec<String>,
}

fn run(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Splits compiler-wrapper output into -I, -L and -l parts.
fn parse_flags(name: &'static str, flags: &str) -> Flavor {
    let mut f = Flavor { name, include_dirs: vec![], link_dirs: vec![], libs: vec![] };
    for w in flags.split_whitespace() {
        if let Some(p) = w.strip_prefix("-I") {
            f.include_dirs.push(p.to_string());
        } else if let Some(p) = w.strip_prefix("-L") {
            f.link_dirs.push(p.to_string());
        } else if let Some(p) = w.strip_prefix("-l") {
            f.libs.push(p.to_string());
        }
    }
    f
}

fn openmpi() -> Option<Flavor> {
    let compile = run("mpicc.openmpi", &["-showme:compile"])?;
    let link = run("mpicc.openmpi", &["-showme:link"])?;
    Some(parse_flags("openmpi", &format!("{compile} {link}")))
}

fn mpich() -> Option<Flavor> {
    let show = run("mpicc.mpich", &["-show"])?;
    Some(parse_flags("mpich", &show))
}

fn detect_default() -> &'static str {
    // `mpicc -showme` only exists in Open MPI's wrapper; MPICH's answers `-show`.
    if run("mpicc", &["-showme:version"]).is_some() {
        "openmpi"
    } else {
        "mpich"
    }
}

fn main() {
    println!("cargo:rerun-if-env-changed=SLUICE_MPI");
    println!("cargo:rerun-if-changed=cbuild");
    println!("cargo::rustc-check-cfg=cfg(sluice_mpi, values(\"openmpi\", \"mpich\"))");
    println!("cargo::rustc-check-cfg=cfg(sluice_large_count)");

    let wanted = env::var("SLUICE_MPI").unwrap_or_else(|_| detect_default().to_string());
    let flavor = match wanted.as_str() {
        "openmpi" => openmpi(),
        "mpich" => mpich(),
        other => panic!("SLUICE_MPI={other}: accepted values are `openmpi` and `mpich`"),
    }
    .unwrap_or_else(|| {
        panic!("SLUICE_MPI={wanted}: its compiler wrapper (mpicc.{wanted}) was not found; install the MPI (scripts/install-deps.sh)")
    });

    println!("cargo:rustc-cfg=sluice_mpi=\"{}\"", flavor.name);
    println!("cargo:rustc-env=SLUICE_MPI={}", flavor.name);
    for d in &flavor.link_dirs {
        println!("cargo:rustc-link-search=native={d}");
    }
    for l in &flavor.libs {
        println!("cargo:rustc-link-lib=dylib={l}");
    }
    println!("cargo:rustc-link-lib=dylib=dl");

    // C accessors for what bindgen cannot see (predefined handles are cast macros).
    let mut cc = cc::Build::new();
    cc.file("cbuild/handles.c").warnings(true).extra_warnings(true);
    for d in &flavor.include_dirs {
        cc.include(d);
    }
    cc.compile("sluice_cbuild");

    let mut bg = bindgen::Builder::default()
        .header("cbuild/wrapper.h")
        .allowlist_function("PMPI_.*")
        .allowlist_function("sluice_c_.*")
        .allowlist_type("MPI_.*")
        .allowlist_var("MPI_.*")
        .allowlist_var("SLUICE_.*")
        .blocklist_function("PMPIX?_.*(Session|File|T_).*")
        .layout_tests(false)
        .generate_comments(false)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()));
    for d in &flavor.include_dirs {
        bg = bg.clang_arg(format!("-I{d}"));
    }
    let bindings = bg.generate().expect("bindgen failed on mpi.h");
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    bindings.write_to_file(out.join("mpi_bindings.rs")).expect("write bindings");

    // MPI-4 large-count `_c` variants: present in MPICH 4.0, absent in Open MPI 4.1.
    let text = std::fs::read_to_string(out.join("mpi_bindings.rs")).unwrap();
    if text.contains("fn PMPI_Send_c(") {
        println!("cargo:rustc-cfg=sluice_large_count");
    }
}
