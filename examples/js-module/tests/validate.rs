//! `js-module render` and `validate` of flow files holding TinyComponents, the binary
//! as a user runs it: the example flow renders as the API server takes it and passes;
//! each refused definition is one line saying why (the runtime not served here, a
//! schema that is not JSON, a script that does not compile, with its line and column),
//! and a node of a refused definition is an unknown component.

use std::process::Command;

/// `js-module <args>`: exit status, stdout, stderr.
fn js_module(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_js-module"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("js-module runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn render_gives_a_tinycomponent_its_api_version_and_its_schemas_as_json_text() {
    let (code, stdout, stderr) = js_module(&["render", "flows/reshape.yaml"]);
    assert_eq!(code, Some(0), "{stderr}");
    let docs: Vec<serde_json::Value> = stdout
        .split("---\n")
        .map(|d| serde_yaml::from_str(d).expect("YAML"))
        .collect();
    let shape_js = docs
        .iter()
        .find(|d| d["metadata"]["name"] == "shape-js")
        .expect("the TinyComponent is kept");
    assert_eq!(shape_js["apiVersion"], "operator.tinysystems.io/v1alpha1", "{stdout}");
    let input = shape_js["spec"]["input"].as_str().expect("input is JSON text");
    let input: serde_json::Value = serde_json::from_str(input).expect("JSON");
    assert_eq!(input["properties"]["user"]["type"], "object");
    // Already text: kept as written.
    let shape_expr = docs
        .iter()
        .find(|d| d["metadata"]["name"] == "shape-expr")
        .expect("kept");
    assert_eq!(
        shape_expr["spec"]["output"],
        r#"{"type": "object", "properties": {"name": {"type": "string"}, "shout": {"type": "string"}}}"#
    );
}

#[test]
fn the_example_flow_with_its_definitions_passes() {
    let (code, stdout, stderr) = js_module(&["validate", "flows/reshape.yaml"]);
    assert_eq!((code, stdout.as_str()), (Some(0), ""), "{stderr}");
    assert!(stderr.contains("no problems (2 nodes"), "{stderr}");
}

#[test]
fn each_refused_definition_is_one_line_and_its_nodes_are_unknown() {
    let (code, stdout, stderr) = js_module(&["validate", "tests/flows/invalid.yaml"]);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    let expected = [
        "TinyComponent `unserved` (component `unserved`, runtime `lua`): this module does not serve runtime `lua` (it serves: expr, js)",
        "TinyComponent `bad-schema` (component `bad_schema`, runtime `expr`): spec.input is not a JSON Schema object",
        "TinyComponent `bad-js` (component `bad_js`, runtime `js`): the script does not compile at line 2, column ",
    ];
    for want in expected {
        assert_eq!(
            lines.iter().filter(|l| l.starts_with(want)).count(),
            1,
            "{want}\nin:\n{stdout}"
        );
    }
    assert!(
        lines
            .iter()
            .any(|l| l.contains("invalid.js-module-v0.bad-js-1") && l.contains("bad_js")),
        "the node of the refused definition:\n{stdout}"
    );
    assert!(stderr.contains("4 problems"), "{stderr}");
}
