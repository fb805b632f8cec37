//! The Go SDK's `module.proto` (`proto/module.proto`), generated at build time by
//! protox and tonic-prost-build: `MessageRequest`, `MessageResponse`, and
//! `module_service_client` / `module_service_server`.

#![allow(missing_docs, clippy::all, clippy::pedantic, missing_debug_implementations)]

tonic::include_proto!("module");
