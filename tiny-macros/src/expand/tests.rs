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

/// `#[handlers]` on the hello component's handlers: a taken message, a lent one, the
/// usual return types and another, and a method that is not a handler.
#[test]
fn handlers_hello() {
    let out = super::handlers::attribute(
        quote!(),
        quote! {
            impl Hello {
                /// Greets.
                async fn on_input(&self, ctx: &Ctx<Self>, msg: HelloIn) -> Result<Reply> {
                    let greeting = format!("Hello, {}!", msg.name);
                    self.greeting.emit(ctx, Greeting { greeting }).await
                }

                async fn on_peek(&self, _ctx: &Ctx<Self>, msg: &HelloIn) {
                    tracing::info!(name = %msg.name, "peeked");
                }

                #[handler]
                async fn count(&self, _: &Ctx<Self>, _: Tick) -> anyhow::Result<Reply> {
                    Ok(Reply::empty())
                }

                fn greeting_word(&self) -> &str {
                    "Hello"
                }
            }
        },
    );
    insta::assert_snapshot!(pretty(out));
}

/// A mistake in a handler's signature: the error on its token, and the handler in the
/// shape the dispatch calls, so that the derive reports nothing more.
#[test]
fn handlers_mistake() {
    let out = super::handlers::attribute(
        quote!(),
        quote! {
            impl Hello {
                async fn on_input(&self, msg: HelloIn) -> Result<Reply> {
                    Ok(Reply::empty())
                }
            }
        },
    );
    let text = out.to_string();
    assert!(text.contains("this handler has no `ctx` parameter"), "{text}");
    assert!(text.contains("_ : & 'handler :: tiny_sdk :: Ctx < Self >"), "{text}");
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

/// `crate = "..."` reaches every path the derives write, the fallback impls written
/// after a mistake included: nothing names `tiny_sdk` any more.
#[test]
fn crate_path_override() {
    let component = super::component::derive(quote! {
        #[derive(Component)]
        #[component(crate = "sdk", name = "server", settings = S, control = C, hooks)]
        pub struct Server {
            #[port(handler = start_stop)]
            start: Input<Start>,
            #[port(keys = routes)]
            out: Outputs<Request, Response>,
            #[port(enabled_by = enable_stop)]
            stop: Input<Stop>,
            #[port(position = Bottom, catch)]
            error: Output<ErrorMessage>,
        }
    });
    let broken = super::component::derive(quote! {
        #[derive(Component)]
        #[component(crate = "sdk", name = "server", unknown_key)]
        pub struct Server {}
    });
    let schema = super::schema::derive(quote! {
        #[derive(Schema)]
        #[tiny(crate = "::my::sdk")]
        pub enum Choice { A, #[tiny(title = "B")] B { x: u32 } }
    });
    let broken_schema = super::schema::derive(quote! {
        #[derive(Schema)]
        #[tiny(crate = "::my::sdk", unknown_key)]
        pub struct Choice { x: u32 }
    });
    let handlers = super::handlers::attribute(
        quote!(crate = "sdk"),
        quote! {
            impl Server {
                async fn on_start(&self, msg: Start) -> i32 { 1 }
            }
        },
    );
    for out in [component, broken, schema, broken_schema, handlers] {
        let text = out.to_string();
        assert!(!text.contains("tiny_sdk"), "{text}");
        assert!(text.contains("sdk :: "), "{text}");
    }
    let schema = super::schema::derive(quote! {
        #[derive(Schema)]
        #[tiny(crate = "::my::sdk")]
        pub struct Message { x: u32 }
    });
    assert!(
        schema
            .to_string()
            .contains(r#"crate = "::my::sdk::__private::schemars""#),
        "{schema}"
    );
}

/// A `crate` value that is not a path is one error on it, saying what it takes.
#[test]
fn crate_path_not_a_path() {
    let out = super::component::derive(quote! {
        #[derive(Component)]
        #[component(name = "x", crate = "not a path")]
        pub struct X {}
    });
    let text = out.to_string();
    assert!(
        text.contains("`crate` takes the path the SDK is reachable by"),
        "{text}"
    );
    assert!(!text.contains("not a path ::"), "{text}");
}
