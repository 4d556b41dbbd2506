# Roomkeeper. `make dev` runs the whole system locally, `make test` runs every
# test layer. Both install or build the tools they need into bin/.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

GO ?= go
LOCALBIN := $(CURDIR)/bin
IMG ?= roomkeeper/manager:dev

# What `make images` stamps on the images: the tag and labels, and the
# creation time (the commit's, so that a commit gives the same images).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
CREATED ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
IMAGE_ARCH ?= $(shell $(GO) env GOARCH)
IMAGE_BINARIES := manager roomserver

CONTROLLER_TOOLS_VERSION ?= v0.23.0
GOLANGCI_LINT_VERSION ?= v2.15.0
KUSTOMIZE_VERSION ?= v5.8.1
HELM_VERSION ?= v3.22.0

CONTROLLER_GEN := $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
GOLANGCI_LINT := $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
KUSTOMIZE := $(LOCALBIN)/kustomize-$(KUSTOMIZE_VERSION)
HELM := $(LOCALBIN)/helm-$(HELM_VERSION)

# The test layers; `make test` runs them all at once (CI runs it).
# envtest: what needs a real kube-apiserver and etcd (the control plane).
ENVTEST_PKGS := ./controllers/... ./cmd/manager/... ./internal/joinapi/... ./internal/adminapi/... ./internal/retention/... ./internal/testenv/... ./hack/devgateway/... ./hack/localnode/...
# e2e: the whole system: make dev's cluster (test/e2e, with Chromium), the
# room server under attack (test/attack), the chart and kustomize
# (test/install), the operator at scale (test/scale).
E2E_PKGS := ./test/...
# unit: everything else, on a real Postgres and real WebSockets.
UNIT_PKGS = $(shell $(GO) list ./... | grep -v -e '/controllers$$' -e '/cmd/manager$$' -e '/internal/joinapi$$' -e '/internal/adminapi$$' -e '/internal/retention$$' -e '/internal/testenv$$' -e '/hack/devgateway$$' -e '/hack/localnode$$' -e '/test/')
# What the Go tests are told of the tools they drive.
TEST_ENV = KUBEBUILDER_ASSETS="$$(hack/controlplane.sh)" ROOMKEEPER_HELM=$(HELM) ROOMKEEPER_KUSTOMIZE=$(KUSTOMIZE) \
	  ROOMKEEPER_CHROMIUM="$$(hack/webtools.sh chromium)" ROOMKEEPER_NODE_BIN="$$(hack/node.sh)" \
	  ROOMKEEPER_CLUSTER_IMAGES=$(CLUSTER_IMAGES)

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

# Where controller-gen reads markers: the project's code, not bin/ (which
# holds other modules' sources, hack/node.sh's, with markers of their own).
GEN_PATHS := ./api/...;./cmd/...;./controllers/...;./internal/...;./pkg/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs and RBAC into config/.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd:allowDangerousTypes=true webhook paths="$(GEN_PATHS)" output:crd:artifacts:config=config/crd/bases
	@# The Helm chart carries copies: its CRDs, the manager's roles, the room servers' status policy and the content packs.
	rm -f charts/roomkeeper/crds/*.yaml && cp config/crd/bases/*.yaml charts/roomkeeper/crds/
	cp config/rbac/role.yaml charts/roomkeeper/files/manager-role.yaml
	cp config/rbac/leader_election_role.yaml charts/roomkeeper/files/leader-election-role.yaml
	cp config/rbac/room_admin_role.yaml charts/roomkeeper/files/room-admin-role.yaml
	cp config/policy/roomserver_status_policy.yaml charts/roomkeeper/files/roomserver-status-policy.yaml
	rm -rf charts/roomkeeper/files/content && mkdir -p charts/roomkeeper/files/content && cp config/content/*.yaml charts/roomkeeper/files/content/

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate DeepCopy methods.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="$(GEN_PATHS)"

.PHONY: fmt
fmt: ## Run gofmt.
	gofmt -l -w $$(git ls-files '*.go' | grep -v '^hack/controlplane/')

.PHONY: vet
vet: ## Run go vet.
	$(GO) vet ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint.
	$(GOLANGCI_LINT) run ./...

.PHONY: verify
verify: manifests generate ## Regenerate and fail when generated files or gofmt differ from git.
	@test -z "$$(gofmt -l $$(git ls-files '*.go' | grep -v '^hack/controlplane/'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }
	$(GO) mod tidy
	@git diff --exit-code -- api config charts go.mod go.sum || { echo "generated files are stale: run make manifests generate and commit"; exit 1; }

##@ Build

.PHONY: build
build: generate web ## Build every binary under cmd/ (and the dev node agent and gateway) into bin/.
	@mkdir -p $(LOCALBIN)
	$(GO) build -o $(LOCALBIN)/ ./cmd/...
	$(GO) build -o $(LOCALBIN)/localnode ./hack/localnode
	$(GO) build -o $(LOCALBIN)/devgateway ./hack/devgateway

.PHONY: web
web: ## Build the browser client (SDK, demo page, map generator as WebAssembly) into web/dist, which the manager embeds.
	hack/webtools.sh node
	GOOS=js GOARCH=wasm $(GO) build -trimpath -ldflags="-s -w" -o web/dist/mapgen.wasm ./web/mapgen
	cp "$$($(GO) env GOROOT)/lib/wasm/wasm_exec.js" web/dist/wasm_exec.js
	cd web && npx tsc --noEmit -p . && node build.mjs

.PHONY: web-test
web-test: web ## Run the SDK's unit tests (vitest, on the Go codec's and simulation's vectors).
	cd web && npx vitest run

.PHONY: images
images: web ## Build OCI image archives of the manager and the room server into bin/images (static, scratch, non-root; no Docker).
	@mkdir -p $(LOCALBIN)/images/$(IMAGE_ARCH) && rm -f $(LOCALBIN)/images/*.oci.tar
	for b in $(IMAGE_BINARIES); do \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath -ldflags="-s -w" -o $(LOCALBIN)/images/$(IMAGE_ARCH)/$$b ./cmd/$$b; \
	done
	$(GO) run ./hack/images --out $(LOCALBIN)/images --version $(VERSION) --revision "$(REVISION)" --created $(CREATED) \
	  --arch $(IMAGE_ARCH) $(foreach b,$(IMAGE_BINARIES),$(b)=$(LOCALBIN)/images/$(IMAGE_ARCH)/$(b))

.PHONY: controlplane
controlplane: ## Build etcd and the Kubernetes control plane from source (cached in bin/controlplane/).
	hack/controlplane.sh

##@ Test

.PHONY: test
test: manifests generate vet build images cluster-images $(HELM) $(KUSTOMIZE) ## Run every test layer (unit, envtest and e2e, the Go packages at once).
	hack/postgres.sh ensure >/dev/null
	hack/fuzz.sh
	cd web && npx vitest run
	$(TEST_ENV) $(GO) test -race -count=1 -timeout 30m ./...

.PHONY: test-unit
test-unit: generate web ## Unit and integration tests without a control plane (real Postgres, real WebSockets), fuzz seeds, the SDK's vitest.
	hack/postgres.sh ensure >/dev/null
	hack/fuzz.sh
	cd web && npx vitest run
	$(GO) test -race -count=1 -timeout 30m $(UNIT_PKGS)

.PHONY: test-envtest
test-envtest: manifests generate web ## The controllers, manager, join API and dev node against a real kube-apiserver and etcd.
	hack/postgres.sh ensure >/dev/null
	$(TEST_ENV) $(GO) test -race -count=1 -timeout 30m $(ENVTEST_PKGS)

.PHONY: test-e2e
test-e2e: manifests generate build images cluster-images $(HELM) $(KUSTOMIZE) ## The whole system: make dev's cluster, attacks, the chart, the operator at scale.
	hack/postgres.sh ensure >/dev/null
	$(TEST_ENV) $(GO) test -race -count=1 -timeout 30m $(E2E_PKGS)

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME (default 50000x executions) each.
	hack/fuzz.sh

##@ Deployment

.PHONY: install
install: manifests $(KUSTOMIZE) ## Install the CRDs into the cluster of the current kubeconfig.
	$(KUSTOMIZE) build config/crd | kubectl apply --server-side -f -

.PHONY: uninstall
uninstall: manifests $(KUSTOMIZE) ## Remove the CRDs.
	$(KUSTOMIZE) build config/crd | kubectl delete --ignore-not-found -f -

.PHONY: deploy
deploy: manifests $(KUSTOMIZE) ## Deploy the operator with image IMG.
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	$(KUSTOMIZE) build config/default | kubectl apply --server-side -f -

.PHONY: undeploy
undeploy: $(KUSTOMIZE) ## Remove the operator.
	$(KUSTOMIZE) build config/default | kubectl delete --ignore-not-found -f -

##@ Tools

$(CONTROLLER_GEN):
	@mkdir -p $(LOCALBIN)
	GOBIN=$(LOCALBIN) $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
	mv $(LOCALBIN)/controller-gen $@

$(GOLANGCI_LINT):
	@mkdir -p $(LOCALBIN)
	GOBIN=$(LOCALBIN) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(LOCALBIN)/golangci-lint $@

$(HELM):
	@mkdir -p $(LOCALBIN)
	@# A tool, kept out of the project's go.mod.
	GOBIN=$(LOCALBIN) $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	mv $(LOCALBIN)/helm $@

$(KUSTOMIZE):
	@mkdir -p $(LOCALBIN)
	GOBIN=$(LOCALBIN) $(GO) install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)
	mv $(LOCALBIN)/kustomize $@

##@ Local system

.PHONY: dev
dev: build ## Run the whole system locally (control plane, node, Postgres, operator, samples); Ctrl-C stops it.
	hack/controlplane.sh >/dev/null
	$(GO) run ./hack/devcluster $(DEV_FLAGS)

# make cluster's images besides make images': the pods' sandbox and the
# cluster's add-ons, packed from hack/node.sh's binaries.
CLUSTER_IMAGES := $(LOCALBIN)/cluster-images

.PHONY: cluster-images
cluster-images: ## Build what make cluster runs besides make images': a node's parts (hack/node.sh, cached), the sandbox and add-on images, bin/cluster.
	@NODE=$$(hack/node.sh) && mkdir -p $(CLUSTER_IMAGES)/bin && \
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags="-s -w" -o $(CLUSTER_IMAGES)/bin/pause ./hack/pause && \
	$(GO) run ./hack/images --out $(CLUSTER_IMAGES) --version cluster \
	  pause=$(CLUSTER_IMAGES)/bin/pause coredns=$$NODE/coredns traefik=$$NODE/traefik >/dev/null && \
	$(GO) build -o $(LOCALBIN)/cluster ./hack/cluster

.PHONY: cluster
cluster: images cluster-images ## Run a real Kubernetes locally (as root): a control plane and two nodes with containerd, runc and kubelet built from source, in namespaces of their own.
	$(LOCALBIN)/cluster up --control-plane $$(hack/controlplane.sh) --node-bin $$(hack/node.sh) \
	  $(CLUSTER_IMAGES)/*.oci.tar $(LOCALBIN)/images/*.oci.tar

.PHONY: cluster-down
cluster-down: ## Stop make cluster and remove every process, mount, cgroup and namespace it made.
	@if [ -x $(LOCALBIN)/cluster ]; then $(LOCALBIN)/cluster down; else echo "make cluster has not run"; fi

.PHONY: dev-down
dev-down: ## Stop a running `make dev`.
	@if [ -f .dev/dev.pid ]; then kill -TERM $$(cat .dev/dev.pid) && echo "stopping make dev (pid $$(cat .dev/dev.pid))"; else echo "make dev is not running"; fi
