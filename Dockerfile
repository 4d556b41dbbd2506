# Images for teams that build with Docker (or Buildah, Kaniko): one target
# per binary.
#   docker build --target manager    -t roomkeeper/manager:dev .
#   docker build --target roomserver -t roomkeeper/roomserver:dev .
# `make images` builds the same images without Docker (hack/images): a
# static binary on scratch, run as the numeric non-root user 65532, with CA
# certificates and a /tmp; the manager embeds the browser client (web/).
# hack/images/dockerfile_test.go keeps them alike.
# The browser client the manager embeds (make web): the page and SDK
# bundle here, the map generator's WebAssembly in the build stage.
FROM node:20 AS web
WORKDIR /src/web
COPY web/package.json web/package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY web/ ./
RUN npx tsc --noEmit -p . && node build.mjs

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
COPY --from=web /src/web/dist/ web/dist/
RUN GOOS=js GOARCH=wasm go build -trimpath -ldflags="-s -w" -o web/dist/mapgen.wasm ./web/mapgen \
 && cp "$(go env GOROOT)/lib/wasm/wasm_exec.js" web/dist/wasm_exec.js
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags="-s -w" -o /out/bin/ ./cmd/manager ./cmd/roomserver
RUN mkdir -p /out/root/etc /out/root/home/nonroot /out/root/tmp \
 && printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >/out/root/etc/passwd \
 && printf 'root:x:0:\nnonroot:x:65532:\n' >/out/root/etc/group \
 && chown 65532:65532 /out/root/home/nonroot && chmod 0700 /out/root/home/nonroot && chmod 1777 /out/root/tmp

FROM scratch AS base
ARG VERSION=dev
LABEL org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="https://github.com/roomkeeper/roomkeeper" \
      org.opencontainers.image.vendor="Roomkeeper"
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/root/ /
ENV PATH=/ SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
USER 65532:65532

FROM base AS roomserver
LABEL org.opencontainers.image.title="roomkeeper-roomserver"
COPY --from=build /out/bin/roomserver /roomserver
ENTRYPOINT ["/roomserver"]

FROM base AS manager
LABEL org.opencontainers.image.title="roomkeeper-manager"
COPY --from=build /out/bin/manager /manager
ENTRYPOINT ["/manager"]
