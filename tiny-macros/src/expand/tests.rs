//! Expansion snapshots: what `cargo expand` shows an author, pretty-printed.
//!
//! Review a changed snapshot as you would review the code: it should read like code
//! a person would write, with the logic in `tiny_sdk` calls.

use proc_macro2::TokenStream;
use quote::quote;

fn pretty(out: TokenStream) -> String {
    match syn::parse2::<syn::File>(out.clone()) {
        Ok(file) => prettyplease::unparse(&file),
        Err(e) => panic!("the expansion does not parse: {e}\n{out}"),
    }
}

/// The hello component of `examples/hello`.
#[test]
fn component_hello() {
    let out = super::component::derive(quote! {
        /// Greets a person by name.
        ///
        /// An empty name is an error: it goes to the `error` port with the input's context.
        #[derive(Debug, Component, Default)]
        #[component(name = "hello", tags("example", "greeting"), settings = HelloSettings)]
        pub struct Hello {
            /// The name to greet.
            #[port(position = Left)]
            input: Input<HelloIn>,
            /// The greeting.
            #[port(position = Right)]
            greeting: Output<Greeting>,
            /// Names that could not be greeted.
            #[port(position = Bottom, catch)]
            error: Output<ErrorMessage>,
        }
    });
    insta::assert_snapshot!(pretty(out));
}

/// Settings, controls, the author's own hooks, a custom handler, a request/response
/// port and a plain field.
#[test]
fn component_full() {
    let out = super::component::derive(quote! {
        /// Serves HTTP requests.
        #[derive(Component)]
        #[component(
            name = "http_server",
            description = "Serves HTTP and answers with the flow's response",
            info = "Starts a listener on the configured port.",
            tags("http", "server"),
            settings = ServerSettings,
            control = ServerControl,
            hooks,
        )]
        pub struct Server {
            /// Starts or stops the listener.
            #[port(label = "Start / stop", handler = start_stop)]
            start: Input<Start>,
            /// One HTTP request; the reply is the HTTP response.
            #[port(position = Right)]
            request: Output<Request, Response>,
            #[port(position = Bottom, catch)]
            error: Output<ErrorMessage>,
            listener: std::sync::Mutex<Option<Listener>>,
        }
    });
    insta::assert_snapshot!(pretty(out));
}

/// A port message with several editor hints and serde attributes.
#[test]
fn schema_message() {
    let out = super::schema::derive(quote! {
        /// An outgoing HTTP request.
        #[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
        #[serde(default, rename_all = "camelCase")]
        pub struct Request {
            /// Where to send it.
            #[tiny(configurable, title = "URL", format = "uri", col_span = 8)]
            pub url: String,
            #[tiny(enum("GET", "POST"), enum_titles("Get", "Post"), default = "GET", col_span = 4)]
            pub method: String,
            /// Sent for POST only.
            #[tiny(format = "code", language = "json", required_when("method", "===", "POST"))]
            pub request_body: String,
            #[tiny(secret, tab = "Auth")]
            pub api_token: Option<String>,
            #[serde(skip)]
            pub attempts: u32,
        }
    });
    insta::assert_snapshot!(pretty(out));
}
