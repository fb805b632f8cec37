//! Finding (and if needed building) the control-plane binaries.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::{Error, io_err};

/// Kubernetes version of the binaries that `tools/control-plane/build.sh` builds.
pub const KUBERNETES_VERSION: &str = "1.20.2";

/// Environment variable naming a folder that holds `etcd`, `kube-apiserver` and
/// `kube-controller-manager`. When set, nothing is built.
pub const BIN_ENV: &str = "TINY_CONTROL_PLANE_BIN";

/// The script that builds the binaries, in this repository.
const BUILD_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/control-plane/build.sh");

/// Paths of the three control-plane binaries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binaries {
    /// `etcd`
    pub etcd: PathBuf,
    /// `kube-apiserver`
    pub kube_apiserver: PathBuf,
    /// `kube-controller-manager`
    pub kube_controller_manager: PathBuf,
}

impl Binaries {
    /// The binaries in `dir`; fails if one of them is missing.
    pub fn in_dir(dir: &Path) -> Result<Self, Error> {
        let bins = Self {
            etcd: dir.join("etcd"),
            kube_apiserver: dir.join("kube-apiserver"),
            kube_controller_manager: dir.join("kube-controller-manager"),
        };
        let missing: Vec<String> = [&bins.etcd, &bins.kube_apiserver, &bins.kube_controller_manager]
            .into_iter()
            .filter(|p| !is_executable(p))
            .map(|p| p.display().to_string())
            .collect();
        if missing.is_empty() {
            Ok(bins)
        } else {
            Err(Error::Binaries(format!(
                "missing or not executable: {}",
                missing.join(", ")
            )))
        }
    }

    /// Finds the binaries: the folder named by `TINY_CONTROL_PLANE_BIN` if set, else the
    /// per-user cache ([`cache_bin_dir`]). If the cache is empty, runs
    /// `tools/control-plane/build.sh` (5-8 minutes the first time on 2 cores; its progress goes to
    /// stderr).
    pub async fn locate_or_build() -> Result<Self, Error> {
        if let Some(dir) = std::env::var_os(BIN_ENV).filter(|v| !v.is_empty()) {
            return Self::in_dir(Path::new(&dir))
                .map_err(|e| Error::Binaries(format!("{BIN_ENV}={}: {e}", Path::new(&dir).display())));
        }
        if let Some(dir) = cache_bin_dir()
            && let Ok(bins) = Self::in_dir(&dir)
        {
            return Ok(bins);
        }
        let dir = run_build_script().await?;
        Self::in_dir(&dir)
    }
}

/// `kubectl` of the control plane's version: beside the binaries in
/// `TINY_CONTROL_PLANE_BIN` if it is there, else in the per-user cache, which
/// `tools/control-plane/build.sh` fills (from Debian's `kubernetes-client`) when it lacks it.
pub async fn kubectl() -> Result<PathBuf, Error> {
    let in_dir = |dir: &Path| Some(dir.join("kubectl")).filter(|p| is_executable(p));
    if let Some(found) = std::env::var_os(BIN_ENV)
        .filter(|v| !v.is_empty())
        .and_then(|dir| in_dir(Path::new(&dir)))
    {
        return Ok(found);
    }
    if let Some(found) = cache_bin_dir().and_then(|dir| in_dir(&dir)) {
        return Ok(found);
    }
    let dir = run_build_script().await?;
    in_dir(&dir).ok_or_else(|| Error::Binaries(format!("no kubectl in {}", dir.display())))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() > 0 && m.permissions().mode() & 0o111 != 0)
}

/// `${TINY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tiny}/control-plane/k8s-1.20.2/bin`, the
/// folder `build.sh` fills. `None` when neither variable nor `HOME` is set.
pub fn cache_bin_dir() -> Option<PathBuf> {
    let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let root = non_empty("TINY_CACHE_DIR")
        .or_else(|| non_empty("XDG_CACHE_HOME").map(|d| d.join("tiny")))
        .or_else(|| non_empty("HOME").map(|d| d.join(".cache").join("tiny")))?;
    Some(
        root.join("control-plane")
            .join(format!("k8s-{KUBERNETES_VERSION}"))
            .join("bin"),
    )
}

/// Runs the build script; returns the folder it prints on stdout.
async fn run_build_script() -> Result<PathBuf, Error> {
    let script = Path::new(BUILD_SCRIPT);
    if !script.is_file() {
        return Err(Error::Binaries(format!(
            "no control-plane binaries (set {BIN_ENV} to a folder holding etcd, kube-apiserver and \
             kube-controller-manager {KUBERNETES_VERSION}), and the build script {} does not exist",
            script.display()
        )));
    }
    // Straight to stderr, not `eprintln!`: the test harness would capture that, and a
    // five-minute silence looks like a hang.
    let _ = writeln!(
        std::io::stderr(),
        "tiny-testenv: no control-plane binaries yet; building them with {} (first time: 5-8 minutes)",
        script.display()
    );
    let output = tokio::process::Command::new("bash")
        .arg(script)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(io_err(format!("running {}", script.display())))?
        // Not `Command::output`: that would capture stderr too and hide the progress lines.
        // If this future is dropped, the build goes on and still fills the cache.
        .wait_with_output()
        .await
        .map_err(io_err(format!("running {}", script.display())))?;
    if !output.status.success() {
        return Err(Error::Binaries(format!(
            "{} failed ({}); its messages are above, prefixed `control-plane:`",
            script.display(),
            output.status
        )));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let dir = stdout.lines().rev().find(|l| !l.trim().is_empty()).map(str::trim);
    match dir {
        Some(dir) => Ok(PathBuf::from(dir)),
        None => Err(Error::Binaries(format!(
            "{} printed no binaries folder",
            script.display()
        ))),
    }
}
