# The module image for people who build with Docker: the same layout as `make image`
# (tools/image/build.sh): the release binary at /manager, its shared libraries, user 65532,
# no shell.
#   docker build --build-arg PACKAGE=tiny-example-hello --build-arg BIN=hello-module -t hello-module .
FROM rust:1-bookworm AS build
ARG PACKAGE=tiny-example-hello
ARG BIN=hello-module
WORKDIR /src
COPY . .
RUN cargo build --locked --release -p "$PACKAGE" --bin "$BIN" \
 && tools/image/rootfs.sh "target/release/$BIN" /rootfs

FROM scratch
COPY --from=build /rootfs/ /
USER 65532:65532
WORKDIR /
ENV PATH=/
ENTRYPOINT ["/manager"]
