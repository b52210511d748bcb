# qexp in a container, for `qexp kube` (docs/kubernetes.md). Two stages:
# the build image compiles qexp; the runtime image holds only the binary,
# the example plans and CA certificates, and runs as a non-root user.
#   docker build -t ghcr.io/<you>/qexp:0.1.0 .
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin qexp \
 && cp target/release/qexp /qexp

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /qexp /usr/local/bin/qexp
COPY experiments /opt/qexp/experiments
# The working folder is the user's: `docker run IMAGE run PLAN` writes
# results/ and reports/ here (a Job writes to its mounted /results instead).
RUN chown 65532:65532 /opt/qexp
WORKDIR /opt/qexp
USER 65532:65532
ENTRYPOINT ["qexp"]
CMD ["--help"]
