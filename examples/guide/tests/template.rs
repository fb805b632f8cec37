//! A module made from `templates/module` with `cargo run -p tiny-runtime --example new`,
//! as the guide starts one: it builds reusing the workspace's dependencies, its own
//! tests pass, its chart values make a release, and its binary runs its flow on the
//! local control plane.

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    time::{Duration, Instant},
};

use kube::Api;
use tiny_runtime::crd::{SignalPhase, TinyNode, TinySignal};

const REPO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
const CRDS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../crds");

/// Kills the module when the test ends, passed or not.
struct Module(Child);

impl Drop for Module {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The target directory this test was built in (`<target>/debug/deps/<test>`): the new
/// crate builds there too, so what the workspace built is there to reuse.
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    exe.ancestors()
        .nth(3)
        .expect("<target>/debug/deps/<test>")
        .to_path_buf()
}

fn cargo(dir: &Path, args: &[&str]) -> Output {
    let out = Command::new(option_env!("CARGO").unwrap_or("cargo"))
        .args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target_dir())
        // The new crate's snapshot must match as written, never be rewritten.
        .env("INSTA_UPDATE", "no")
        .output()
        .expect("cargo runs");
    // A schema change in the SDK shows here as the template's snapshot failing: update
    // templates/module/tests/snapshots/ from the diff below.
    assert!(
        out.status.success(),
        "cargo {args:?} in {}:\n{}\n{}",
        dir.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Every package of a build with the features it is compiled with, as `cargo tree`
/// shows them (`name@version features`).
fn features(dir: &Path, scope: &[&str]) -> BTreeSet<String> {
    let mut args = vec!["tree", "-e", "features", "--prefix", "none", "-f", "{p} {f}"];
    args.extend(scope);
    let out = cargo(dir, &args);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.contains(" feature \""))
        .filter_map(|l| {
            // `name vX (path) (*) features`: the path and the "seen before" mark go.
            let mut words = l.split_whitespace().filter(|w| !w.starts_with('(') && *w != "(*)");
            let name = words.next()?;
            let version = words.next()?;
            Some(format!("{name}@{version} {}", words.next().unwrap_or_default()))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_module_from_the_template_builds_tests_and_runs_its_flow_on_the_control_plane() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("my-module");
    let repo = PathBuf::from(REPO);

    // As the guide says: `cargo run -p tiny-runtime --example new -- ../my-module my-module`.
    let new = ["run", "-q", "-p", "tiny-runtime", "--example", "new", "--"];
    let made = cargo(
        &repo,
        &[&new[..], &[dir.to_str().expect("utf-8"), "my-module"]].concat(),
    );
    assert!(String::from_utf8_lossy(&made.stdout).contains("made module `my-module`"));
    for file in [
        "Cargo.toml",
        "Cargo.lock",
        "src/lib.rs",
        "src/main.rs",
        "tests/harness.rs",
        "tests/schema.rs",
        "tests/snapshots/schema__greet.snap",
        "flows/demo.yaml",
        "chart/values.yaml",
    ] {
        assert!(dir.join(file).is_file(), "the new crate has no {file}");
    }

    // Its first build reuses the workspace's: every dependency is compiled with the
    // features the workspace compiles it with (otherwise cargo builds tokio, kube and
    // tiny-runtime again, as a single package's features differ).
    let workspace = features(&repo, &["--workspace"]);
    let module = features(&dir, &[]);
    let differ: Vec<&String> = module
        .iter()
        .filter(|p| !p.starts_with("my-module@") && !workspace.contains(*p))
        .collect();
    assert!(
        differ.is_empty(),
        "these dependencies of a new module are compiled with other features than in the workspace: {differ:#?}"
    );

    // Its own tests: the harness runs the flow file, the schema matches its snapshot.
    let tested = cargo(&dir, &["test", "--message-format", "json"]);
    let (test_build, report) = artifacts(&String::from_utf8_lossy(&tested.stdout));
    for test in [
        "greets_with_the_word_the_settings_name",
        "the_editor_schema_is_the_reviewed_one",
    ] {
        assert!(
            report.contains(&format!("{test} ... ok")),
            "{test} did not pass:\n{report}"
        );
    }
    // As `cargo fmt` leaves it, whatever the name's length.
    cargo(&dir, &["fmt", "--check"]);

    // Each component beside the node name a flow gives it. The first `cargo run` after
    // `cargo test` reuses the test build: it compiles no crate but the binary (the
    // features the dev-dependencies turn on agree with the normal ones: see
    // tiny-runtime's Cargo.toml). A crate compiled again into the very file the test
    // build made is not that (a source of tiny's edited in between, as when another
    // change is under way in this checkout); one compiled into another is.
    let run = cargo(
        &dir,
        &["run", "--message-format", "json", "--", "components", "--names"],
    );
    let (run_build, names) = artifacts(&String::from_utf8_lossy(&run.stdout));
    let again: Vec<&Artifact> = run_build
        .iter()
        .filter(|a| !a.fresh && a.target != "my-module" && !test_build.iter().any(|t| t.made_any_of(a)))
        .collect();
    assert!(
        again.is_empty(),
        "`cargo run` after `cargo test` compiled these again, with other features: {again:#?}"
    );
    assert!(
        names.contains("show_last\t{flow}.{module}.show-last-{suffix}"),
        "{names}"
    );

    // Its chart values, with the binary's RBAC, make a release of the tiny-module chart
    // that runs the module under its name.
    let rbac = Command::new(target_dir().join("debug/my-module"))
        .arg("rbac")
        .output()
        .expect("my-module runs");
    assert!(rbac.status.success(), "{}", String::from_utf8_lossy(&rbac.stderr));
    std::fs::write(dir.join("rbac.yaml"), &rbac.stdout).expect("rbac.yaml");
    let chart = repo.join("charts/tiny-module");
    let rendered = Command::new(repo.join("tools/helm/helm"))
        .args(["template", chart.to_str().expect("utf-8"), "--name", "my-module"])
        .args([
            "--namespace",
            "tinysystems",
            "-f",
            "rbac.yaml",
            "-f",
            "chart/values.yaml",
        ])
        .current_dir(&dir)
        .output()
        .expect("tools/helm/helm runs");
    assert!(
        rendered.status.success(),
        "{}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    let manifests = String::from_utf8_lossy(&rendered.stdout);
    for expected in ["image: my-module:0.1.0", "- --name=my-module-v0\n", "- --version=0.1.0"] {
        assert!(manifests.contains(expected), "{expected} not in:\n{manifests}");
    }

    // Section 7: what `make up` gives (a control plane, the namespace, a NATS broker),
    // the variables its env file sets, the module run with them.
    let env = tiny_testenv::TestEnv::builder()
        .crds_dir(CRDS)
        .start()
        .await
        .expect("the control plane starts");
    let ns = "tinysystems";
    env.create_namespace(ns).await.expect("namespace");
    let nats = tiny_testenv::NatsServer::start().await.expect("nats-server starts");
    let kubectl = tiny_testenv::kubectl().await.expect("kubectl");
    let path = format!(
        "{}:{}",
        kubectl.parent().expect("kubectl's directory").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let binary = target_dir().join("debug/my-module");
    let _module = Module(
        Command::new(&binary)
            .args(["run", "--name", "my-module-v0", "--version", "0.1.0", "--namespace", ns])
            .env("KUBECONFIG", env.kubeconfig_path())
            .env("TINY_NATS_URL", nats.url())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .expect("my-module starts"),
    );
    // The guide's commands, as written there, in the crate.
    let shell = |command: &str| {
        Command::new("bash")
            .args(["-o", "pipefail", "-c", command])
            .current_dir(&dir)
            .env("CARGO_TARGET_DIR", target_dir())
            .env("KUBECONFIG", env.kubeconfig_path())
            .env("TINY_NATS_URL", nats.url())
            .env("PATH", &path)
            .output()
            .expect("bash runs")
    };
    let commands = guide_commands("## 7.");
    let [validate, apply, send, inspect] = commands.as_slice() else {
        panic!("section 7 runs four commands in the crate: {commands:?}");
    };
    for (command, what) in [
        (validate, "validate"),
        (apply, "render"),
        (send, "send --wait"),
        (inspect, "inspect"),
    ] {
        assert!(command.starts_with(&format!("cargo run -- {what} ")), "{command}");
    }
    let checked = shell(validate);
    assert!(
        checked.status.success(),
        "{validate}: {}",
        String::from_utf8_lossy(&checked.stdout)
    );
    let applied = shell(apply);
    assert!(
        applied.status.success(),
        "{apply}: {}",
        String::from_utf8_lossy(&applied.stderr)
    );

    let client = env.client();
    let signals: Api<TinySignal> = Api::namespaced(client.clone(), ns);
    let deadline = Instant::now() + Duration::from_secs(90);
    let status = loop {
        let s = signals.get("demo-ada").await.expect("the signal").status;
        if let Some(s) = s.filter(|s| matches!(s.signal_phase(), Some(SignalPhase::Delivered | SignalPhase::Failed))) {
            break s;
        }
        assert!(Instant::now() < deadline, "the signal was not delivered within 90 s");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(
        status.signal_phase(),
        Some(SignalPhase::Delivered),
        "{:?}",
        status.error
    );

    // The answer, over NATS, from the module as the guide runs it.
    let sent = shell(send);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&sent.stdout),
        String::from_utf8_lossy(&sent.stderr),
    );
    assert!(sent.status.success(), "{send}: {stderr}");
    assert_eq!(stdout.trim(), r#"{"context":null,"greeting":"Hi, Grace!"}"#, "{stderr}");

    // Which output fired: show-last-1's dashboard has the greeting (the leader writes
    // it to the node's status within a moment).
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let shown = shell(inspect);
        let text = String::from_utf8_lossy(&shown.stdout);
        assert!(
            shown.status.success(),
            "{inspect}: {}",
            String::from_utf8_lossy(&shown.stderr)
        );
        if text.contains("greeting: Hi, Grace!") && text.contains("received: 2") {
            assert!(text.contains("_control:"), "{text}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "show-last-1 does not show the greeting:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    // A node whose output has no edge: `send --wait` says that no reply came, and why;
    // an edge to a port that does not exist shows on the sender's status.
    let extra = r#"
apiVersion: operator.tinysystems.io/v1alpha1
kind: TinyNode
metadata: { name: demo.my-module-v0.greet-2 }
spec: { module: my-module, component: greet }
---
apiVersion: operator.tinysystems.io/v1alpha1
kind: TinyNode
metadata: { name: demo.my-module-v0.greet-3 }
spec:
  module: my-module
  component: greet
  edges: [{ id: typo, port: greeting, to: "demo.my-module-v0.show-last-1:inptu" }]
"#;
    std::fs::write(dir.join("flows/extra.yaml"), extra).expect("extra.yaml");
    let applied = shell("kubectl apply -n tinysystems -f flows/extra.yaml");
    assert!(applied.status.success(), "{}", String::from_utf8_lossy(&applied.stderr));
    let nodes: Api<TinyNode> = Api::namespaced(client, ns);
    let deadline = Instant::now() + Duration::from_secs(60);
    let condition = loop {
        let loaded = nodes.get("demo.my-module-v0.greet-2").await.expect("greet-2").status;
        let typo = nodes.get("demo.my-module-v0.greet-3").await.expect("greet-3").status;
        let edges = typo
            .as_ref()
            .and_then(|s| s.conditions.iter().find(|c| c.type_ == "EdgesResolved").cloned());
        if let (Some(loaded), Some(edges)) = (loaded, edges)
            && !loaded.ports.is_empty()
        {
            break edges;
        }
        assert!(
            Instant::now() < deadline,
            "greet-2 did not load, or greet-3's edge is not on its status"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(condition.status, "False");
    assert!(
        condition
            .message
            .contains("edge `typo` leads to `demo.my-module-v0.show-last-1:inptu`"),
        "{}",
        condition.message
    );
    let quiet = shell(&send.replace("greet-1", "greet-2"));
    let stderr = String::from_utf8_lossy(&quiet.stderr);
    assert!(quiet.status.success(), "{stderr}");
    assert!(quiet.stdout.is_empty());
    assert!(
        stderr.contains("delivered; no reply: `demo.my-module-v0.greet-2` handled the message and answered nothing"),
        "{stderr}"
    );
}

/// A crate `cargo --message-format json` built (`compiler-artifact`).
#[derive(Debug)]
struct Artifact {
    #[expect(dead_code, reason = "shown by the assertion's message, through `Debug`")]
    package: String,
    target: String,
    /// Compiled by this build (not `fresh`).
    fresh: bool,
    /// The files it made, whose names carry the hash of its features and dependencies.
    files: Vec<String>,
}

impl Artifact {
    /// Whether `other` is this crate compiled as this build compiled it: one of the files
    /// it made is one this build made (`deps/lib<name>-<hash>.rmeta`; a library the
    /// binary's package is also copied to `lib<name>.rlib`, by one build, not another).
    fn made_any_of(&self, other: &Artifact) -> bool {
        other.files.iter().any(|f| self.files.contains(f))
    }
}

/// What `cargo --message-format json` built, and the rest of its output: the program's
/// (or the tests').
fn artifacts(stdout: &str) -> (Vec<Artifact>, String) {
    let mut built = Vec::new();
    let mut rest = String::new();
    for line in stdout.lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            rest.push_str(line);
            rest.push('\n');
            continue;
        };
        if message["reason"] == "compiler-artifact" {
            let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
            built.push(Artifact {
                package: text(&message["package_id"]),
                target: text(&message["target"]["name"]),
                fresh: message["fresh"] == true,
                files: message["filenames"]
                    .as_array()
                    .map(|f| f.iter().map(text).collect())
                    .unwrap_or_default(),
            });
        }
    }
    (built, rest)
}

/// The commands of the guide's section that starts with `heading` that run in the crate
/// (`cargo run -- ...`, but not the module's `run`, which the test starts itself).
fn guide_commands(heading: &str) -> Vec<String> {
    let guide = std::fs::read_to_string(PathBuf::from(REPO).join("docs/guide.md")).expect("docs/guide.md");
    let section = guide
        .split("\n## ")
        .find(|s| heading.strip_prefix("## ").is_some_and(|h| s.starts_with(h)));
    let section = section.unwrap_or_else(|| panic!("docs/guide.md has no {heading}"));
    let mut commands = Vec::new();
    let mut in_sh = false;
    for line in section.lines() {
        match line {
            "```sh" => in_sh = true,
            "```" => in_sh = false,
            l if in_sh && l.starts_with("cargo run -- ") && !l.starts_with("cargo run -- run ") => {
                commands.push(l.to_owned());
            }
            _ => {}
        }
    }
    commands
}

/// A module whose name is longer than the template's is still formatted as `cargo fmt`
/// formats it.
#[test]
fn a_new_crate_is_formatted_whatever_its_name() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("m");
    let new = ["run", "-q", "-p", "tiny-runtime", "--example", "new", "--"];
    cargo(
        Path::new(REPO),
        &[&new[..], &[dir.to_str().expect("utf-8"), "weather-station-module"]].concat(),
    );
    cargo(&dir, &["fmt", "--check"]);
}

#[test]
fn new_refuses_a_name_nodes_cannot_carry_and_a_directory_in_use() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let new = |path: &Path, name: &str| {
        Command::new(option_env!("CARGO").unwrap_or("cargo"))
            .args(["run", "-q", "-p", "tiny-runtime", "--example", "new", "--"])
            .arg(path)
            .arg(name)
            .current_dir(REPO)
            .env("CARGO_TARGET_DIR", target_dir())
            .output()
            .expect("cargo runs")
    };
    let out = new(&tmp.path().join("a"), "My_Module");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`My_Module` cannot name a module"), "{err}");
    assert!(!tmp.path().join("a").exists(), "nothing is made");

    std::fs::write(tmp.path().join("kept.txt"), "mine").expect("a file");
    let out = new(tmp.path(), "my-module");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("exists and is not an empty directory"), "{err}");
    assert_eq!(
        std::fs::read_dir(tmp.path()).expect("the directory").count(),
        1,
        "nothing is added"
    );
}
