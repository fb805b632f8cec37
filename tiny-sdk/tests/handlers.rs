//! `#[handlers]`: each form of handler the derive accepts compiles with the attribute
//! and runs as without it. Its mistakes are the `handlers_*` cases of `compile_fail`.
//! What the attribute makes of a handler warns of nothing the author did not write.
#![deny(warnings)]

use std::future::Future;

use serde_json::{Value, json};
use tiny_sdk::{Msg, harness::Harness, prelude::*};

/// Two fields, taken apart in the handler's parameter. (A switch may be written
/// `= true` or `= false` too.)
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
struct Pair {
    #[tiny(configurable = true)]
    a: u32,
    #[tiny(shared = false)]
    b: u32,
}

#[derive(Debug, Component, Default)]
#[component(name = "forms")]
struct Forms {
    owned: Input<Value>,
    lent: Input<Value>,
    unit: Input<Value>,
    result_unit: Input<Value>,
    reply: Input<Value>,
    other_result: Input<Value>,
    mutable: Input<Vec<u32>>,
    pattern: Input<Pair>,
    ignored: Input<Value>,
    #[port(handler = custom)]
    named: Input<Value>,
    lifetimes: Input<Value>,
    by_hand: Input<Value>,
    any: Input<Msg>,
    any_lent: Input<Msg>,
    out: Output<Value>,
}

#[handlers]
impl Forms {
    /// Doc comments and attributes stay on the handler.
    #[allow(clippy::unused_async)]
    pub async fn on_owned(&self, _ctx: &Ctx<Self>, msg: Value) -> Result<Reply> {
        Ok(Reply::value(json!({ "owned": msg })))
    }

    async fn on_lent(&self, _ctx: &Ctx<Self>, msg: &Value) -> Result<Reply> {
        Ok(Reply::value(json!({ "lent": msg })))
    }

    async fn on_unit(&self, ctx: &Ctx<Self>, msg: Value) {
        // An early `return` leaves the handler, as in an `async fn`.
        if msg.is_null() {
            return;
        }
        let _ = self.out.emit(ctx, msg).await;
    }

    async fn on_result_unit(&self, _ctx: &Ctx<Self>, msg: Value) -> Result<()> {
        let n = msg.as_u64().ok_or_else(|| Error::permanent("not a number"))?;
        if n == 0 {
            return Err(Error::permanent("zero"));
        }
        Ok(())
    }

    async fn on_reply(&self, _ctx: &Ctx<Self>, msg: Value) -> Reply {
        Reply::value(msg)
    }

    /// A return type the attribute does not recognise is declared `impl IntoReply`; the
    /// body still has the type written, for `Ok(..)`, `?` and `return`.
    async fn on_other_result(&self, _ctx: &Ctx<Self>, msg: Value) -> std::result::Result<Reply, String> {
        if msg.is_null() {
            return Err("null".to_owned());
        }
        let reply = self.helper(msg).await.map_err(|e| e.to_string())?;
        Ok(reply)
    }

    async fn on_mutable(&self, _ctx: &Ctx<Self>, mut msg: Vec<u32>) -> Result<Reply> {
        msg.push(4);
        Ok(Reply::value(json!(msg)))
    }

    async fn on_pattern(&self, _ctx: &Ctx<Self>, Pair { a, b }: Pair) -> Result<Reply> {
        Ok(Reply::value(json!(a + b)))
    }

    #[rustfmt::skip]
    async fn on_ignored(&self, _: &Ctx<Self>, _: Value) -> Result<Reply> { Ok(Reply::value(json!("ignored"))) }

    #[handler]
    async fn custom(&self, _ctx: &Ctx<Self>, msg: Value) -> Result<Reply> {
        Ok(Reply::value(json!({ "custom": msg })))
    }

    async fn on_lifetimes<'a>(&'a self, ctx: &'a Ctx<Self>, msg: Value) -> Result<Reply> {
        self.out.emit(ctx, msg).await?;
        Ok(Reply::value(json!("lifetimes")))
    }

    /// Written by hand as a plain `fn` returning its future: left as it is.
    #[allow(clippy::manual_async_fn)]
    fn on_by_hand(&self, _ctx: &Ctx<Self>, msg: Value) -> impl Future<Output = Result<Reply>> + Send {
        async move { Ok(Reply::value(json!({ "by_hand": msg }))) }
    }

    async fn on_any(&self, _ctx: &Ctx<Self>, msg: Msg) -> Reply {
        Reply::msg(msg)
    }

    async fn on_any_lent(&self, _ctx: &Ctx<Self>, msg: &Msg) -> Result<Reply> {
        Ok(Reply::value(json!({ "any_lent": msg.json()? })))
    }

    /// Not a handler: left as it is.
    async fn helper(&self, msg: Value) -> Result<Reply> {
        Ok(Reply::value(json!({ "other_result": msg })))
    }
}

#[tokio::test]
async fn every_form_runs() {
    let h = Harness::builder()
        .register::<Forms>()
        .yaml("kind: TinyNode\nmetadata: { name: f }\nspec: { module: m, component: forms }\n")
        .build()
        .await
        .expect("loads");
    let value = |port: &'static str, msg: Value| {
        let h = &h;
        async move {
            h.send(&format!("f:{port}"), msg)
                .await
                .unwrap_or_else(|e| panic!("{port}: {e}"))
                .into_value()
        }
    };
    assert_eq!(value("owned", json!(1)).await, Some(json!({ "owned": 1 })));
    assert_eq!(value("lent", json!(2)).await, Some(json!({ "lent": 2 })));
    assert_eq!(value("unit", json!(null)).await, None);
    assert_eq!(value("unit", json!(3)).await, None);
    assert_eq!(value("result_unit", json!(3)).await, None);
    assert_eq!(value("reply", json!("r")).await, Some(json!("r")));
    assert_eq!(
        value("other_result", json!(5)).await,
        Some(json!({ "other_result": 5 }))
    );
    assert_eq!(value("mutable", json!([1, 2, 3])).await, Some(json!([1, 2, 3, 4])));
    assert_eq!(value("pattern", json!({ "a": 1, "b": 2 })).await, Some(json!(3)));
    assert_eq!(value("ignored", json!(0)).await, Some(json!("ignored")));
    assert_eq!(value("named", json!(6)).await, Some(json!({ "custom": 6 })));
    assert_eq!(value("lifetimes", json!(7)).await, Some(json!("lifetimes")));
    assert_eq!(value("by_hand", json!(8)).await, Some(json!({ "by_hand": 8 })));
    assert_eq!(value("any", json!([9, "x"])).await, Some(json!([9, "x"])));
    assert_eq!(value("any_lent", json!(10)).await, Some(json!({ "any_lent": 10 })));

    let err = h.send("f:result_unit", json!(0)).await.expect_err("zero fails");
    assert!(err.to_string().contains("zero"), "{err}");
    let err = h.send("f:other_result", json!(null)).await.expect_err("null fails");
    assert!(err.to_string().contains("null"), "{err}");
}

/// Handlers whose bodies only panic (issue 47: the attribute made an unreachable
/// expression of its own, warned of at `#[handlers]`).
#[derive(Debug, Component, Default)]
#[component(name = "panics")]
struct Panics {
    unit: Input<Value>,
    result: Input<Value>,
    other: Input<Value>,
}

#[handlers]
impl Panics {
    async fn on_unit(&self, _ctx: &Ctx<Self>, _msg: Value) {
        panic!("not written yet")
    }

    async fn on_result(&self, _ctx: &Ctx<Self>, _msg: Value) -> Result<Reply> {
        todo!()
    }

    async fn on_other(&self, _ctx: &Ctx<Self>, _msg: Value) -> std::result::Result<Reply, String> {
        unimplemented!()
    }
}

#[tokio::test]
async fn a_handler_that_only_panics_compiles_without_a_warning_and_fails_its_message() {
    let h = Harness::builder()
        .register::<Panics>()
        .yaml("kind: TinyNode\nmetadata: { name: f.m.panics-1 }\nspec: { module: m, component: panics }\n")
        .build()
        .await
        .expect("loads");
    for port in ["unit", "result", "other"] {
        let e = h
            .send(&format!("f.m.panics-1:{port}"), json!(1))
            .await
            .expect_err("a panic fails the message");
        assert!(e.to_string().contains("panicked"), "{e}");
    }
}
