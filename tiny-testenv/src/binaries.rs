//! Finding (and if needed building) the control-plane binaries.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex;

use crate::error::{Error, io_err};

/// Kubernetes version the control plane runs by default: what users run, built from Go
/// modules by `tools/control-plane/build.sh`.
pub const KUBERNETES_VERSION: &str = "1.35.4";

/// The oldest Kubernetes tiny supports, selected with `TINY_K8S_VERSION=1.20` (built from
/// Debian's source package; `make test-k8s-oldest` runs the cluster tests on it).
pub const OLDEST_KUBERNETES_VERSION: &str = "1.20.2";

/// Environment variable that selects the control plane's version: unset, `1.35` or
/// `current` for [`KUBERNETES_VERSION`], `1.20` or `oldest` for
/// [`OLDEST_KUBERNETES_VERSION`]. `tools/control-plane/build.sh` reads it too.
pub const VERSION_ENV: &str = "TINY_K8S_VERSION";

/// Environment variable naming a folder that holds `etcd`, `kube-apiserver` and
/// `kube-controller-manager`. When set, nothing is built.
pub const BIN_ENV: &str = "TINY_CONTROL_PLANE_BIN";

/// The script that builds the binaries, in this repository.
const BUILD_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/control-plane/build.sh");

/// The Kubernetes version `TINY_K8S_VERSION` selects ([`KUBERNETES_VERSION`] when unset).
pub fn kubernetes_version() -> Result<&'static str, Error> {
    let selected = std::env::var(VERSION_ENV).unwrap_or_default();
    match selected.trim() {
        "" | "1.35" | "current" => Ok(KUBERNETES_VERSION),
        v if v == KUBERNETES_VERSION => Ok(KUBERNETES_VERSION),
        "1.20" | "oldest" => Ok(OLDEST_KUBERNETES_VERSION),
        v if v == OLDEST_KUBERNETES_VERSION => Ok(OLDEST_KUBERNETES_VERSION),
        other => Err(Error::Binaries(format!(
            "{VERSION_ENV}={other}: the control plane is built in version 1.35 (the default) or 1.20"
        ))),
    }
}

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
    /// per-user cache of the version `TINY_K8S_VERSION` selects ([`cache_bin_dir`]). If the
    /// cache is empty, runs `tools/control-plane/build.sh` (the first time on 2 cores: about
    /// 7 minutes for 1.35, 8 for 1.20; its progress goes to stderr).
    pub async fn locate_or_build() -> Result<Self, Error> {
        if let Some(dir) = std::env::var_os(BIN_ENV).filter(|v| !v.is_empty()) {
            return Self::in_dir(Path::new(&dir))
                .map_err(|e| Error::Binaries(format!("{BIN_ENV}={}: {e}", Path::new(&dir).display())));
        }
        kubernetes_version()?;
        if let Some(dir) = cache_bin_dir()
            && let Ok(bins) = Self::in_dir(&dir)
        {
            return Ok(bins);
        }
        let dir = run_build_script().await?;
        Self::in_dir(&dir)
    }

    /// The minor version of `kube-apiserver` (`35` for 1.35.4), from its `--version`;
    /// asked once per binary and process. Which flags the processes take depends on it.
    pub(crate) async fn apiserver_minor(&self) -> Result<u32, Error> {
        static SEEN: Mutex<Option<HashMap<PathBuf, u32>>> = Mutex::new(None);
        let known = |map: &Option<HashMap<PathBuf, u32>>| map.as_ref()?.get(&self.kube_apiserver).copied();
        if let Some(minor) = known(&SEEN.lock().unwrap_or_else(std::sync::PoisonError::into_inner)) {
            return Ok(minor);
        }
        let path = &self.kube_apiserver;
        let out = tokio::process::Command::new(path)
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .await
            .map_err(io_err(format!("running {} --version", path.display())))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let minor = parse_minor(&text).ok_or_else(|| {
            Error::Binaries(format!(
                "{} --version printed {:?}, not `Kubernetes v1.N.P`",
                path.display(),
                text.trim()
            ))
        })?;
        SEEN.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get_or_insert_with(HashMap::new)
            .insert(path.clone(), minor);
        Ok(minor)
    }
}

/// `35` from `Kubernetes v1.35.4` (what `kube-apiserver --version` prints).
fn parse_minor(version: &str) -> Option<u32> {
    let rest = version.trim().strip_prefix("Kubernetes v1.")?;
    rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// `kubectl` of the control plane's version: beside the binaries in
/// `TINY_CONTROL_PLANE_BIN` if it is there, else in the per-user cache, which
/// `tools/control-plane/build.sh` fills when it lacks it.
pub async fn kubectl() -> Result<PathBuf, Error> {
    let in_dir = |dir: &Path| Some(dir.join("kubectl")).filter(|p| is_executable(p));
    if let Some(found) = std::env::var_os(BIN_ENV)
        .filter(|v| !v.is_empty())
        .and_then(|dir| in_dir(Path::new(&dir)))
    {
        return Ok(found);
    }
    kubernetes_version()?;
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

/// `${TINY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tiny}/control-plane/k8s-VERSION/bin`, the
/// folder `build.sh` fills for the version `TINY_K8S_VERSION` selects. `None` when neither
/// variable nor `HOME` is set, or `TINY_K8S_VERSION` names no version that is built.
pub fn cache_bin_dir() -> Option<PathBuf> {
    let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let root = non_empty("TINY_CACHE_DIR")
        .or_else(|| non_empty("XDG_CACHE_HOME").map(|d| d.join("tiny")))
        .or_else(|| non_empty("HOME").map(|d| d.join(".cache").join("tiny")))?;
    Some(
        root.join("control-plane")
            .join(format!("k8s-{}", kubernetes_version().ok()?))
            .join("bin"),
    )
}

/// Runs the build script; returns the folder it prints on stdout.
async fn run_build_script() -> Result<PathBuf, Error> {
    let script = Path::new(BUILD_SCRIPT);
    if !script.is_file() {
        return Err(Error::Binaries(format!(
            "no control-plane binaries (set {BIN_ENV} to a folder holding etcd, kube-apiserver and \
             kube-controller-manager {}), and the build script {} does not exist",
            kubernetes_version()?,
            script.display()
        )));
    }
    // Straight to stderr, not `eprintln!`: the test harness would capture that, and a
    // five-minute silence looks like a hang.
    let _ = writeln!(
        std::io::stderr(),
        "tiny-testenv: no control-plane binaries yet; building Kubernetes {} with {} (first time on 2 cores: \
         about 7 minutes for 1.35, 8 for 1.20)",
        kubernetes_version()?,
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

#[cfg(test)]
mod tests {
    use super::parse_minor;

    #[test]
    fn the_minor_version_is_read_from_version_output() {
        assert_eq!(parse_minor("Kubernetes v1.35.4\n"), Some(35));
        assert_eq!(parse_minor("Kubernetes v1.20.2"), Some(20));
        assert_eq!(parse_minor("Kubernetes v0.0.0-master+$Format:%H$"), None);
        assert_eq!(parse_minor("etcd Version: 3.6.5"), None);
    }
}
