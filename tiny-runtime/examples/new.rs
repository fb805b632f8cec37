//! Makes a new module crate from `templates/module`:
//! `cargo run -p tiny-runtime --example new -- <path> <name>`.
//!
//! The crate gets a component with settings, a harness test, a schema snapshot test, a
//! flow file and the `tiny-module` chart's values. Its dependencies on tiny are paths
//! into this checkout, and it starts from this checkout's `Cargo.lock`, so that with
//! the same `CARGO_TARGET_DIR` its first build reuses what the workspace built.

use std::{
    fmt, fs,
    path::{Path, PathBuf},
    process::ExitCode,
};

/// This checkout, where the template and the crates the new module depends on are.
const REPO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
/// The template's own name, replaced by the new module's in every file.
const TEMPLATE_NAME: &str = "my-module";

/// Why no crate was made.
#[derive(Debug)]
enum NewError {
    Usage,
    /// Not a name a module, a crate and a Kubernetes object can all take.
    BadName(String),
    /// The target exists and is not an empty directory.
    NotEmpty(PathBuf),
    Io(PathBuf, std::io::Error),
}

impl fmt::Display for NewError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NewError::Usage => write!(f, "usage: new <path> <name>   (e.g. new ../my-module my-module)"),
            NewError::BadName(n) => write!(
                f,
                "`{n}` cannot name a module: use lowercase letters, digits and `-`, starting with a letter \
                 (it is part of node names such as `flow.{n}-v0.component-1`)"
            ),
            NewError::NotEmpty(p) => write!(f, "{} exists and is not an empty directory", p.display()),
            NewError::Io(p, e) => write!(f, "{}: {e}", p.display()),
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [path, name] = args.as_slice() else {
        eprintln!("new: {}", NewError::Usage);
        return ExitCode::from(2);
    };
    match new(Path::new(path), name) {
        Ok(()) => {
            println!(
                "made module `{name}` in {path}; next:\n  cd {path} && cargo test\n  \
                 cargo run -- components --names   (each component, and the node names a flow gives it)"
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("new: {e}");
            ExitCode::FAILURE
        }
    }
}

fn valid(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.ends_with('-')
        && name.len() <= 40
}

fn new(target: &Path, name: &str) -> Result<(), NewError> {
    if !valid(name) {
        return Err(NewError::BadName(name.to_owned()));
    }
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |e| NewError::Io(p, e)
    };
    if target.exists() && fs::read_dir(target).map_err(io(target))?.next().is_some() {
        return Err(NewError::NotEmpty(target.to_path_buf()));
    }
    let repo = fs::canonicalize(REPO).map_err(io(Path::new(REPO)))?;
    let template = repo.join("templates/module");
    let repo_path = repo.to_str().ok_or_else(|| {
        NewError::Io(
            repo.clone(),
            std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8"),
        )
    })?;
    let replace = |text: &str| {
        text.replace(TEMPLATE_NAME, name)
            .replace(&TEMPLATE_NAME.replace('-', "_"), &name.replace('-', "_"))
            // The template's path dependencies point from `templates/module`.
            .replace("path = \"../../", &format!("path = \"{repo_path}/"))
    };
    copy(&template, target, &replace)?;
    // The workspace's versions, so that the new crate's dependencies are the ones
    // already built (cargo drops what the crate does not use).
    let lock = repo.join("Cargo.lock");
    fs::copy(&lock, target.join("Cargo.lock")).map_err(io(&lock))?;
    format(target);
    Ok(())
}

/// Formats the new crate as `cargo fmt` would: the name replaced changes the length of
/// lines, so the template's own formatting no longer holds. Without rustfmt the crate is
/// left as it is (it compiles the same).
fn format(target: &Path) {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let formatted = std::process::Command::new(cargo)
        .arg("fmt")
        .current_dir(target)
        .status();
    if !formatted.is_ok_and(|s| s.success()) {
        eprintln!(
            "new: `cargo fmt` did not run in {}; the crate is not formatted",
            target.display()
        );
    }
}

/// Copies `from` into `to`, every file's text through `replace`; build outputs and
/// pending snapshots stay behind.
fn copy(from: &Path, to: &Path, replace: &dyn Fn(&str) -> String) -> Result<(), NewError> {
    fs::create_dir_all(to).map_err(|e| NewError::Io(to.to_path_buf(), e))?;
    let entries = fs::read_dir(from).map_err(|e| NewError::Io(from.to_path_buf(), e))?;
    for entry in entries {
        let entry = entry.map_err(|e| NewError::Io(from.to_path_buf(), e))?;
        let (src, file) = (entry.path(), entry.file_name());
        let file = file.to_string_lossy();
        if file == "target" || file == "Cargo.lock" || file.ends_with(".snap.new") {
            continue;
        }
        let dst = to.join(replace(&file));
        if src.is_dir() {
            copy(&src, &dst, replace)?;
        } else {
            let text = fs::read_to_string(&src).map_err(|e| NewError::Io(src.clone(), e))?;
            fs::write(&dst, replace(&text)).map_err(|e| NewError::Io(dst.clone(), e))?;
        }
    }
    Ok(())
}
