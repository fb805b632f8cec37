//! `docs/guide.md` against this crate: its code blocks are this crate's code, its
//! commands are the ones the tests and the Makefile run, and the commands a test here
//! runs do what the guide says.

use std::{path::PathBuf, process::Command};

const GUIDE: &str = include_str!("../../../docs/guide.md");

/// Every shell command the guide shows, with the file that runs it and the text in that
/// file that shows it does (a test's name, the arguments it passes, a Makefile target).
const COMMANDS: &[(&str, &str, &str)] = &[
    (
        "cargo run -p tiny-runtime --example new -- ../my-module my-module",
        "examples/guide/tests/template.rs",
        r#"["run", "-q", "-p", "tiny-runtime", "--example", "new", "--"]"#,
    ),
    (
        "export CARGO_TARGET_DIR=$HOME/.cache/tiny/target",
        "Makefile",
        "export CARGO_TARGET_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/tiny/target",
    ),
    (
        "cd ../my-module && cargo test",
        "examples/guide/tests/template.rs",
        r#"let tested = cargo(&dir, &["test", "--message-format", "json"]);"#,
    ),
    (
        "cargo run -- components --names",
        "examples/guide/tests/template.rs",
        r#"&["run", "--message-format", "json", "--", "components", "--names"],"#,
    ),
    (
        "cargo new --lib my-module",
        "examples/guide/tests/guide.rs",
        "fn cargo_new_makes_a_crate()",
    ),
    (
        "cargo test -p tiny-example-guide",
        "Makefile",
        "$(CARGO) test --workspace",
    ),
    (
        "cargo run -p tiny-example-guide --bin guide-module -- run --help",
        "examples/guide/tests/guide.rs",
        "fn the_binary_takes_the_guides_flags()",
    ),
    ("make up", "Makefile", "\nup: ## "),
    (
        "source $HOME/.cache/tiny/env",
        "Makefile",
        "tee $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/tiny/env",
    ),
    (
        "guide-module capture-run <run-id> -o tests/runs/weather.json",
        "examples/guide/tests/replay.rs",
        "fn the_binary_captures_a_durable_run()",
    ),
    (
        "guide-module validate flows/convert.yaml",
        "examples/guide/tests/guide.rs",
        "fn the_binary_validates_the_guides_flow()",
    ),
    (
        "cargo run -- run --name my-module-v0 --version 0.1.0 --namespace tinysystems",
        "examples/guide/tests/template.rs",
        r#".args(["run", "--name", "my-module-v0", "--version", "0.1.0", "--namespace", ns])"#,
    ),
    (
        "cargo run -- validate flows/demo.yaml",
        "examples/guide/tests/template.rs",
        SECTION_7,
    ),
    (
        "cargo run -- render flows/demo.yaml | kubectl apply -n tinysystems -f -",
        "examples/guide/tests/template.rs",
        SECTION_7,
    ),
    (
        r#"cargo run -- send --wait demo.my-module-v0.greet-1 input '{"name": "Grace"}'"#,
        "examples/guide/tests/template.rs",
        SECTION_7,
    ),
    (
        "cargo run -- inspect demo.my-module-v0.show-last-1",
        "examples/guide/tests/template.rs",
        SECTION_7,
    ),
    (
        "cargo test -p tiny-example-guide --test cluster",
        "Makefile",
        "$(CARGO) test --workspace",
    ),
    ("make run", "Makefile", "\nrun: ## "),
    (
        "guide-module components > components-0.1.0.json",
        "examples/guide/tests/guide.rs",
        "fn the_binary_checks_an_upgrade()",
    ),
    (
        "guide-module check-upgrade --name guide-v0 --from components-0.1.0.json --flow flows/convert.yaml",
        "examples/guide/tests/guide.rs",
        "fn the_binary_checks_an_upgrade()",
    ),
    (
        "guide-module rbac > rbac.yaml",
        "examples/guide/tests/guide.rs",
        "fn the_binary_prints_its_rbac_values()",
    ),
    ("make image", "Makefile", "\nimage: ## "),
    ("make helm-lint", "Makefile", "\nhelm-lint: ## "),
    (
        "tools/helm/helm install charts/tiny-crds tiny-crds --namespace tinysystems",
        "examples/hello/tests/helm_install.rs",
        r#"repo("charts/tiny-crds").to_str().expect("utf-8"),
            "tiny-crds",
            "--namespace","#,
    ),
    (
        "tools/helm/helm install charts/tiny-module guide --namespace tinysystems -f rbac.yaml -f my-values.yaml",
        "examples/hello/tests/helm_install.rs",
        r#"RELEASE,
            "--namespace",
            ns,
            "-f",
            rbac_values.to_str().expect("utf-8"),
            "-f",
            declared.to_str().expect("utf-8"),
            "-f",
            values.to_str().expect("utf-8"),"#,
    ),
    (
        "tools/helm/helm uninstall guide --namespace tinysystems",
        "examples/hello/tests/helm_install.rs",
        r#"&["uninstall", RELEASE, "--namespace", ns"#,
    ),
];

/// How `template.rs` runs the commands of section 7: read from the guide, as written.
const SECTION_7: &str = "let commands = guide_commands(\"## 7.\");";

/// The files of this crate that the guide's code blocks come from.
const SOURCES: &[&str] = &[
    "examples/guide/src/lib.rs",
    "examples/guide/src/bin/guide-module.rs",
    "examples/guide/tests/harness.rs",
    "examples/guide/tests/schema.rs",
    "examples/guide/tests/cluster.rs",
    "examples/guide/tests/replay.rs",
    "examples/guide/flows/convert.yaml",
];

fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The guide's fenced blocks: (language, text, the first line of prose after it).
fn blocks() -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut lines = GUIDE.lines();
    while let Some(line) = lines.next() {
        let Some(lang) = line.strip_prefix("```") else { continue };
        let mut text = String::new();
        for l in lines.by_ref() {
            if l == "```" {
                break;
            }
            text.push_str(l);
            text.push('\n');
        }
        let after = lines.clone().find(|l| !l.trim().is_empty()).unwrap_or_default();
        out.push((lang.to_owned(), text, after.to_owned()));
    }
    out
}

/// The commands of a `sh` block: `\` continuations joined, comments dropped.
fn commands(block: &str) -> Vec<String> {
    let joined = block.replace("\\\n", " ");
    joined
        .lines()
        .map(|l| l.split(" #").next().unwrap_or_default())
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect()
}

#[test]
fn every_code_block_is_in_the_crate() {
    let sources: Vec<String> = SOURCES.iter().map(|p| read(p)).collect();
    let blocks = blocks();
    assert!(blocks.iter().filter(|(lang, ..)| lang == "rust").count() >= 5);
    for (lang, text, _) in &blocks {
        match lang.as_str() {
            "rust" | "yaml" => assert!(
                sources.iter().any(|s| s.contains(text.as_str())),
                "this {lang} block of docs/guide.md is not in {SOURCES:?} word for word:\n{text}"
            ),
            "toml" | "sh" => {}
            other => panic!("docs/guide.md has a ```{other} block that no test checks"),
        }
    }
}

/// The names of the keys of `[section]` in a TOML text.
fn keys(toml: &str, section: &str) -> Vec<String> {
    let mut keys: Vec<String> = toml
        .lines()
        .skip_while(|l| l.trim() != format!("[{section}]"))
        .skip(1)
        .take_while(|l| !l.starts_with('['))
        .filter(|l| !l.trim().is_empty() && !l.trim().starts_with('#'))
        .filter_map(|l| l.split_once('=').map(|(k, _)| k.trim()))
        // `serde.workspace = true` names `serde`.
        .map(|k| k.strip_suffix(".workspace").unwrap_or(k).to_owned())
        .collect();
    keys.sort();
    keys
}

#[test]
fn the_toml_block_is_the_crates_dependencies() {
    let guide: Vec<String> = blocks()
        .into_iter()
        .filter(|(lang, ..)| lang == "toml")
        .map(|(_, text, _)| text)
        .collect();
    assert_eq!(guide.len(), 1, "one Cargo.toml block");
    let manifest = read("examples/guide/Cargo.toml");
    assert_eq!(keys(&guide[0], "dependencies"), keys(&manifest, "dependencies"));
    let dev = keys(&manifest, "dev-dependencies");
    for name in keys(&guide[0], "dev-dependencies") {
        assert!(
            dev.contains(&name),
            "{name} is not a dev-dependency of the guide's crate"
        );
    }
}

#[test]
fn every_command_is_one_a_test_runs() {
    let mut shown = Vec::new();
    for (lang, text, after) in blocks() {
        if lang != "sh" {
            continue;
        }
        assert!(
            after.starts_with('('),
            "the block ```sh\n{text}``` is not followed by where it runs, in parentheses: {after:?}"
        );
        shown.extend(commands(&text));
    }
    let listed: Vec<&str> = COMMANDS.iter().map(|(c, ..)| *c).collect();
    for c in &shown {
        assert!(
            listed.contains(&c.as_str()),
            "docs/guide.md shows `{c}`, which no test runs"
        );
    }
    for c in &listed {
        assert!(
            shown.iter().any(|s| s == c),
            "`{c}` is listed here but not in docs/guide.md"
        );
    }
    for (command, file, evidence) in COMMANDS {
        assert!(
            read(file).contains(evidence),
            "`{command}`: {file} no longer contains {evidence:?}"
        );
    }
}

#[test]
fn cargo_new_makes_a_crate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let new = COMMANDS
        .iter()
        .find(|(c, ..)| c.starts_with("cargo new "))
        .expect("the guide makes a crate by hand");
    let args: Vec<&str> = new.0.split_whitespace().collect();
    assert_eq!(args[0], "cargo");
    let out = Command::new(option_env!("CARGO").unwrap_or("cargo"))
        .args(&args[1..])
        .current_dir(dir.path())
        .output()
        .expect("cargo runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let manifest = std::fs::read_to_string(dir.path().join("my-module/Cargo.toml")).expect("Cargo.toml");
    assert!(manifest.contains(r#"name = "my-module""#), "{manifest}");
    assert!(dir.path().join("my-module/src/lib.rs").is_file());
}

#[test]
fn the_binary_takes_the_guides_flags() {
    let out = Command::new(env!("CARGO_BIN_EXE_guide-module"))
        .args(["run", "--help"])
        .output()
        .expect("guide-module runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let help = String::from_utf8_lossy(&out.stdout);
    let run = COMMANDS
        .iter()
        .find(|(c, ..)| c.starts_with("cargo run -- run "))
        .expect("the guide runs the module");
    let flags = run.0.split_whitespace().filter(|w| w.starts_with("--"));
    for flag in flags.chain(["--grpc-server-bind-address"]) {
        assert!(help.contains(flag), "`run --help` does not list {flag}:\n{help}");
    }
}

#[test]
fn the_binary_prints_its_rbac_values() {
    let out = Command::new(env!("CARGO_BIN_EXE_guide-module"))
        .arg("rbac")
        .output()
        .expect("guide-module runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let values = String::from_utf8_lossy(&out.stdout);
    assert!(values.lines().any(|l| l == "rbac:"), "{values}");
    assert!(values.contains("tinynodes"), "{values}");
}

#[test]
fn the_binary_validates_the_guides_flow() {
    let out = Command::new(env!("CARGO_BIN_EXE_guide-module"))
        .args(["validate", "flows/convert.yaml"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("guide-module runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{}\n{stderr}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(out.stdout.is_empty());
    assert!(
        stderr.contains("flows/convert.yaml: no problems (2 nodes, 1 signals)"),
        "{stderr}"
    );
    // Settings of the wrong type are caught before the flow is applied.
    let dir = tempfile::tempdir().expect("tempdir");
    let wrong = dir.path().join("convert.yaml");
    let flow = read("examples/guide/flows/convert.yaml").replace("{ unit: K }", "{ unit: 7 }");
    std::fs::write(&wrong, flow).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_guide-module"))
        .args(["validate", wrong.to_str().expect("utf-8")])
        .output()
        .expect("guide-module runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.starts_with("node `weather.guide-v0.convert-1`, port `_settings`, field `/unit`: "),
        "{stdout}"
    );
}

/// The commands of the guide's "Before an upgrade", and the lines it says a renamed
/// field would print: checked through `tiny_sdk::flow::check_upgrade`, which the binary
/// runs, with the snapshot's `celsius` renamed in the new build.
#[test]
fn the_binary_checks_an_upgrade() {
    let guide_module = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_guide-module"))
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("guide-module runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, snapshot, stderr) = guide_module(&["components"]);
    assert_eq!(code, Some(0), "{stderr}");
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("components-0.1.0.json");
    std::fs::write(&file, &snapshot).expect("write");
    let (code, stdout, stderr) = guide_module(&[
        "check-upgrade",
        "--name",
        "guide-v0",
        "--from",
        file.to_str().expect("utf-8"),
        "--flow",
        "flows/convert.yaml",
    ]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains("the upgrade keeps every deployed flow working"),
        "{stderr}"
    );

    // A next build with `celsius` renamed `degrees`.
    let components: Vec<tiny_runtime::crd::ModuleComponent> = serde_json::from_str(&snapshot).expect("JSON");
    let old = tiny_runtime::crd::TinyModuleStatus {
        components,
        ..Default::default()
    }
    .component_schemas();
    let mut new = old.clone();
    let input = new[0].ports.iter_mut().find(|p| p.name == "input").expect("input");
    let celsius = &mut input.schema["$defs"]["Celsius"];
    let properties = celsius["properties"].as_object_mut().expect("properties");
    let field = properties.remove("celsius").expect("celsius");
    properties.insert("degrees".into(), field);
    celsius["required"] = serde_json::json!(["degrees"]);
    let flow = tiny_sdk::flow::Flow::from_yaml(&read("examples/guide/flows/convert.yaml")).expect("flow");
    let said: Vec<String> = tiny_sdk::flow::check_upgrade(&flow.nodes, "guide-v0", &old, &new)
        .iter()
        .map(ToString::to_string)
        .collect();
    let shown: Vec<String> = GUIDE
        .lines()
        .filter_map(|l| l.strip_prefix("    breaking: "))
        .map(|l| format!("breaking: {l}"))
        .collect();
    assert_eq!(said, shown);
}

/// `--help` names the variables a flag reads, never their values: `TINY_NATS_URL`
/// holds the broker's token.
#[test]
fn a_nats_user_needs_its_password_and_excludes_the_shared_token() {
    let run = |vars: &[(&str, &str)]| {
        let out = Command::new(env!("CARGO_BIN_EXE_guide-module"))
            .args(["run", "--name", "guide-v0", "--version", "0.1.0"])
            // Were the flags taken, the module would stop here, at once.
            .env("KUBECONFIG", "/nonexistent/kubeconfig")
            .envs(vars.iter().copied())
            .output()
            .expect("guide-module runs");
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    // Refused before anything starts (clap's usage error), naming the variables' flags.
    let (code, err) = run(&[("TINY_NATS_USER", "guide-v0")]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--nats-password"), "{err}");
    let (code, err) = run(&[
        ("TINY_NATS_USER", "guide-v0"),
        ("TINY_NATS_PASSWORD", "pw"),
        ("TINY_NATS_TOKEN", "shared"),
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("cannot be used with") && err.contains("--nats-user") && err.contains("--nats-token"),
        "{err}"
    );
    assert!(
        !err.contains("pw") && !err.contains("shared"),
        "a value in the error: {err}"
    );
}

#[test]
fn no_help_prints_a_variables_value() {
    const TOKEN: &str = "s3cr3t-t0ken";
    let url = format!("nats://{TOKEN}@127.0.0.1:4222");
    let subcommands = [
        "run",
        "send",
        "inspect",
        "validate",
        "components",
        "render",
        "pre-install",
        "pre-delete",
        "check-upgrade",
    ];
    for sub in subcommands.iter().map(|s| vec![*s, "--help"]).chain([vec!["--help"]]) {
        let out = Command::new(env!("CARGO_BIN_EXE_guide-module"))
            .args(&sub)
            .env("TINY_NATS_URL", &url)
            .env("TINY_NATS_USER", TOKEN)
            .env("TINY_NATS_PASSWORD", TOKEN)
            .env("TINY_NATS_NKEY_SEED", TOKEN)
            .env("TINY_NATS_NKEY_SEED_FILE", TOKEN)
            .env("TINY_NATS_CREDS", TOKEN)
            .env("SELF_SERVICE_HOST", TOKEN)
            .env("TINY_INGRESS_HOSTNAME_SUFFIX", TOKEN)
            .output()
            .expect("guide-module runs");
        assert!(
            out.status.success(),
            "{sub:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(
            !help.contains(TOKEN),
            "`{}` prints a variable's value:\n{help}",
            sub.join(" ")
        );
        if matches!(sub[0], "run" | "send") {
            assert!(help.contains("[env: TINY_NATS_URL]"), "{help}");
            assert!(help.contains("[env: TINY_NATS_NKEY_SEED]"), "{help}");
        }
    }
}
