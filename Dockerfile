# keda-gpu-scaler and gpu-metrics on debian:12-slim. See docs/image.md.
#
#   docker build --build-arg VERSION=0.1.0 \
#     --build-arg COMMIT=$(git rev-parse --short HEAD) -t keda-gpu-scaler:0.1.0 .
#
# VERSION and COMMIT are required: --version prints them, and a release
# image never says "dev". NVML (libnvidia-ml.so.1) is not in the image: the
# NVIDIA container runtime mounts the node's driver library at run time.
# tests/deploy/dist (CTest deploy_dist) checks this file against the
# binaries' shared-library closure; `make dist` stages the same file set.

# ---------------------------------------------------------------- build
FROM debian:12 AS build

# scripts/install-deps BUILD_PKGS, nothing else: without cmocka the test
# tree is not configured, and only the programs are built.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      gcc make cmake pkg-config libc6-dev \
      libnghttp2-dev libssl-dev libprotobuf-c-dev protobuf-c-compiler \
      libjansson-dev libyaml-dev \
 && rm -rf /var/lib/apt/lists/*

ARG VERSION
ARG COMMIT
RUN for kv in "VERSION=${VERSION}" "COMMIT=${COMMIT}"; do \
      case "${kv#*=}" in \
        ""|dev|unknown) \
          echo "error: build arg ${kv%%=*} is '${kv#*=}'; pass --build-arg VERSION=X.Y.Z" \
               "--build-arg COMMIT=\$(git rev-parse --short HEAD) (a release image never says dev)" >&2; \
          exit 1 ;; \
      esac; \
    done

WORKDIR /src
COPY . .
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DKGS_WERROR=ON \
      -DKGS_VERSION="${VERSION}" -DKGS_GIT_DESCRIBE="${COMMIT}" \
 && cmake --build /build -j"$(nproc)" --target keda-gpu-scaler gpu-metrics nvml-sim \
 && install -D -m 0755 -t /out/usr/local/bin \
      /build/src/server/keda-gpu-scaler /build/src/cli/gpu-metrics \
 && install -D -m 0644 -t /out/usr/local/share/keda-gpu-scaler/sim /build/sim/libnvml-sim.so \
 && install -D -m 0644 -t /out/usr/local/share/keda-gpu-scaler/sim/scenarios sim/scenarios/*.json

# ---------------------------------------------------------------- runtime
FROM debian:12-slim

ARG VERSION
ARG COMMIT
LABEL org.opencontainers.image.title="keda-gpu-scaler" \
      org.opencontainers.image.description="KEDA external scaler for GPU workloads (NVML), and the gpu-metrics CLI" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}" \
      org.opencontainers.image.source="https://github.com/keda-gpu-scaler/keda-gpu-scaler" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="docker.io/library/debian:12-slim"

# The shared libraries the binaries link (derived: `make dist` writes
# build/dist/runtime-packages.txt; the deploy_dist test keeps this list equal
# to it), plus ca-certificates for TLS verification of sources. libc6 and the
# rest of the base are in debian:12-slim already.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libjansson4 libnghttp2-14 libprotobuf-c1 libssl3 libyaml-0-2 \
      ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 65532 nonroot \
 && useradd --system --uid 65532 --gid 65532 --no-create-home \
      --home-dir /nonexistent --shell /usr/sbin/nologin nonroot

COPY --from=build /out/ /

# Fail the build, not the pod: every library resolves and the stamp is the
# one asked for.
RUN out="$(/usr/local/bin/keda-gpu-scaler --version)" \
 && echo "${out}" \
 && { [ "${out}" = "keda-gpu-scaler ${VERSION} (${COMMIT})" ] \
      || { echo "error: --version does not say ${VERSION} (${COMMIT})" >&2; exit 1; }; } \
 && /usr/local/bin/gpu-metrics --version \
 && /usr/local/bin/gpu-metrics --dry-run >/dev/null

# The NVIDIA container runtime injects the driver's NVML library and the
# device nodes when these are set (a node-wide monitor sees every GPU without
# requesting one); "utility" is NVML/nvidia-smi only, no CUDA.
ENV NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=utility

# 6000 gRPC (KEDA), 9090 Prometheus /metrics, 8081 /healthz and /readyz.
EXPOSE 6000 9090 8081
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/keda-gpu-scaler"]
