# bpa-workflow-controller
SHELL := /usr/bin/env bash
BIN := bin/bpa-workflow-controller
GO_TEST_FLAGS ?=
FUZZTIME ?= 30s
# The kubespray releases whose images the end-to-end suite builds from ../shared/third_party and checks.
KUBESPRAY_VERSIONS ?= v2.30.0 v2.31.0

.PHONY: all
all: build

##@ Development

# Every tool built from Go modules is pinned by a module of its own, hack/tools/<tool>/go.mod,
# so that its dependencies never move the product's.
CONTROLLER_GEN := go tool -modfile=hack/tools/controller-gen/go.mod controller-gen

.PHONY: generate
generate: ## Generate deepcopy from the API markers.
	$(CONTROLLER_GEN) object paths=./api/...

.PHONY: manifests
manifests: ## Generate the CRDs and RBAC from the markers, and the metal3 and Argo CRDs from their modules.
	hack/manifests.sh

.PHONY: docs
docs: ## Write docs/cli.md from the commands, the DAG pictures of README.md and docs/architecture.md from the samples, and docs/argo.md's screenshots from the last make e2e.
	go run ./hack/docgen
	@for shot in $(UI_SCREENSHOTS); do \
	  if [ -f bin/e2e-screenshots/$$shot.png ]; then cp bin/e2e-screenshots/$$shot.png docs/images/; echo "docs: docs/images/$$shot.png from make e2e"; \
	  else echo "docs: docs/images/$$shot.png kept: make e2e took none (Argo's UI not built, or the suite not run)"; fi; \
	done

# The screenshots of Argo's UI the end-to-end suite takes (test/e2e/argo_ui_test.go) and
# docs/argo.md shows.
UI_SCREENSHOTS := argo-workflows argo-workflow-graph argo-failed-step argo-step-log

.PHONY: fmt
fmt: ## gofmt every Go file, and group imports (standard, third party, this project: gci).
	gofmt -w $$(git ls-files '*.go')
	$(GOLANGCI_LINT) fmt ./...

.PHONY: vet
vet: ## go vet.
	go vet ./...
	go vet -tags e2e ./test/e2e/
	go vet -tags load ./test/load/
	go vet -tags vm ./test/vm/

# golangci-lint v2, pinned in hack/tools/golangci-lint/go.mod (a module of its own, so its dependencies never
# move the product's), built by the go command on first use and cached with its build cache.
GOLANGCI_LINT := go tool -modfile=hack/tools/golangci-lint/go.mod golangci-lint

.PHONY: lint
lint: vet ## gofmt check, go vet and golangci-lint (.golangci.yml: depguard keeps pkg/compile and the steps' templates and decisions pure).
	@bad=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$bad" ]; then echo "not gofmt'd: $$bad"; exit 1; fi
	$(GOLANGCI_LINT) run --build-tags e2e,load,vm ./...

.PHONY: lint-fix
lint-fix: ## golangci-lint's fixes.
	$(GOLANGCI_LINT) run --build-tags e2e,load,vm --fix ./...

.PHONY: verify
verify: ## Fail when the committed generated files (manifests, deepcopy, docs) are stale; never writes the tree.
	hack/verify-generated.sh

##@ Test

.PHONY: test-deps
test-deps: ## Install what the tests need (ansible-core, openssh-server; etcd and kube-apiserver built from Go modules), idempotently.
	hack/install-test-deps.sh
	hack/control-plane.sh >/dev/null

# Each suite's go test -json goes through testsummary: the log reads as go test's own, and the
# suite's counts (passed, failed, skipped and why) are kept in SUMMARY_DIR for the report that
# ends make test.
SUMMARY_DIR := bin/test-summary
TESTSUMMARY := bin/testsummary
SUITES := unit race e2e vms
report = $(TESTSUMMARY) report $(SUMMARY_DIR) $(SUITES)

$(TESTSUMMARY): hack/testsummary/main.go
	go build -o $@ ./hack/testsummary

.PHONY: test
test: test-deps lint verify $(TESTSUMMARY) ## Every test: unit, golden, fuzz seeds, ansible-inventory, Argo validation, envtest, sshd; then e2e and vms (as root); then what ran, per suite.
	@rm -rf $(SUMMARY_DIR)
	@set -o pipefail; KUBEBUILDER_ASSETS=$(CURDIR)/bin/k8s go test $(GO_TEST_FLAGS) -json ./... 2>&1 | $(TESTSUMMARY) -suite unit -dir $(SUMMARY_DIR) || { $(report); exit 1; }
	@$(MAKE) --no-print-directory test-race || { $(report); exit 1; }
	@if [ "$$(id -u)" -eq 0 ]; then $(MAKE) --no-print-directory e2e vms || { $(report); exit 1; }; \
	else echo "e2e, vms: need root (mount and network namespaces): not run here; run 'sudo make e2e vms'"; fi
	@$(report)

.PHONY: test-race
test-race: $(TESTSUMMARY) ## The reconcilers with 8 workers each under the race detector (envtest).
	@set -o pipefail; KUBEBUILDER_ASSETS=$(CURDIR)/bin/k8s go test -race -count=1 -json -run '^TestConcurrent' ./internal/controller/ 2>&1 | $(TESTSUMMARY) -suite race -dir $(SUMMARY_DIR)

.PHONY: load
load: test-deps ## Measure the controller on the local control plane (docs/performance.md): a table, then JSON. LOAD_FLAGS, -- controller flags.
	KUBEBUILDER_ASSETS=$(CURDIR)/bin/k8s go run ./test/load $(LOAD_FLAGS)

.PHONY: bench-load
bench-load: test-deps ## The load harness as a Go benchmark (one run, its figures as metrics; for benchstat).
	KUBEBUILDER_ASSETS=$(CURDIR)/bin/k8s go test -tags load -run '^$$' -bench '^BenchmarkLoad$$' -timeout 30m ./test/load/

# The end-to-end suite and the virtual machines' suite, with kubespray's images and downloads
# built first.
KUBESPRAY_BUILDS = images="$$(hack/kubespray-image.sh $(KUBESPRAY_VERSIONS))" && downloads="$$(hack/kubespray-downloads.sh)" && \
	BPA_KUBESPRAY_IMAGES="$$images" BPA_KUBESPRAY_DOWNLOADS="$$downloads" BPA_VM_IMAGE="$$(hack/vm-image.sh)" \
	KUBEBUILDER_ASSETS=$(CURDIR)/bin/k8s
E2E_SUITE = hack/control-plane.sh node >/dev/null && hack/node-images.sh && $(KUBESPRAY_BUILDS) go test -tags e2e -count=1 -v
VM_SUITE = $(KUBESPRAY_BUILDS) go test -tags vm -count=1 -v

.PHONY: e2e
# Exported for the test binary: a variable before $(E2E_SUITE) would reach only its first command.
e2e: export BPA_E2E_SCREENSHOTS := $(CURDIR)/bin/e2e-screenshots
e2e: test-deps $(TESTSUMMARY) ## End to end on a real node (kubelet, containerd, runc) under Argo's own workflow-controller, real SSH and ansible-playbook; kubespray's images and downloads built here (root).
	rm -rf bin/e2e-screenshots
	set -o pipefail; $(E2E_SUITE) -json -timeout 40m ./test/e2e/ 2>&1 | $(TESTSUMMARY) -v -suite e2e -dir $(SUMMARY_DIR)

.PHONY: bench-scale
bench-scale: test-deps ## A scale run's facts and validation with the real kubespray at 3, 20 and 60 simulated nodes (sshd in network namespaces), with and without kept facts: the seconds and the nodes contacted (root; about 6 minutes warm).
	$(VM_SUITE) -run '^$$' -bench '^BenchmarkScaleRunFacts$$' -benchtime 1x -timeout 60m ./test/vm/

.PHONY: vms
vms: test-deps $(TESTSUMMARY) ## The site's servers as virtual machines (QEMU TCG, Debian's kernel, hack/vm-image.sh): boot, DHCP by MAC, the steps, Ansible and apt on them, the real kubespray's scale and removal runs (root; BPA_VM_DOWNLOADS=1: cluster.yml through its downloads too, about 28 minutes more).
	set -o pipefail; $(VM_SUITE) -json -timeout 45m ./test/vm/ 2>&1 | $(TESTSUMMARY) -v -suite vms -dir $(SUMMARY_DIR)

# make e2e-cluster runs kubespray by hand (test/vm), then through the controller and Argo
# (test/e2e), on machines of the same sizes: the second compares itself with the first's figure.
# E2E_CLUSTER=hand or E2E_CLUSTER=argo runs one; UNTIL=ready ends the run by hand once the
# cluster is Ready and its figure recorded (without the plugin, Software, scale and removals).
# Without it, the run through Argo makes a cluster of a master and two workers, removes the
# second worker live, adds it back and removes the first powered off.
# The day-2 runs of the control plane are tests of their own, each on a cluster of its own and
# about two hours warm, so that each fits in a session: E2E_CLUSTER=upgrade (a master and a worker
# at 1.33.4, the test's upgradeFrom, whose downloads are built too, upgraded to kubespray's
# default in two waves, the worker's approved), E2E_CLUSTER=master-added (a second master added
# to a master alone), E2E_CLUSTER=master-removed (the second of two masters removed),
# E2E_CLUSTER=renewal (the control plane's certificates renewed).
E2E_CLUSTER ?= hand argo
UNTIL ?= 1

.PHONY: e2e-cluster
e2e-cluster: export BPA_REAL_CLUSTER := $(UNTIL)
e2e-cluster: export BPA_KUBESPRAY_LOG := $(CURDIR)/bin/e2e-cluster-kubespray.log
e2e-cluster: export BPA_E2E_CLUSTER_FIGURES := $(CURDIR)/bin/e2e-cluster-figures.json
e2e-cluster: export BPA_E2E_STEP_LOGS := $(CURDIR)/bin/e2e-cluster-step-logs
e2e-cluster: test-deps ## A real cluster: kubespray's whole cluster.yml on the virtual machines, offline from the site's mirror, by hand then through the controller and Argo, then a worker removed live and added back, one removed powered off; E2E_CLUSTER=upgrade, master-added, master-removed or renewal: a day-2 run of its own (root; hours: UNTIL=ready, 70 min, stops both at Ready).
	@mkdir -p bin && : > $$BPA_KUBESPRAY_LOG && echo "kubespray's output by hand, as it comes: tail -f $$BPA_KUBESPRAY_LOG"
	@rm -rf $$BPA_E2E_STEP_LOGS && echo "through Argo, each attempt of run-kubespray, as it comes: $$BPA_E2E_STEP_LOGS/"
	@if [[ " $(E2E_CLUSTER) " == *" hand "* ]]; then set -x; $(VM_SUITE) -timeout 150m -run 'TestRealClusterOnVirtualMachines' ./test/vm/; fi
	@if [[ " $(E2E_CLUSTER) " == *" argo "* ]]; then set -x; $(E2E_SUITE) -timeout 240m -run 'TestRealClusterUnderArgo' ./test/e2e/; fi
	@if [[ " $(E2E_CLUSTER) " == *" upgrade "* ]]; then set -x; from="$$(hack/kubespray-downloads.sh 1.33.4)" && \
	  export BPA_REAL_DAY2=upgrade BPA_KUBESPRAY_DOWNLOADS_FROM="$$from" && $(E2E_SUITE) -timeout 240m -run 'TestRealClusterUpgradeUnderArgo' ./test/e2e/; fi
	@if [[ " $(E2E_CLUSTER) " == *" master-added "* ]]; then set -x; export BPA_REAL_DAY2=master-added && $(E2E_SUITE) -timeout 240m -run 'TestRealMasterAddedUnderArgo' ./test/e2e/; fi
	@if [[ " $(E2E_CLUSTER) " == *" master-removed "* ]]; then set -x; export BPA_REAL_DAY2=master-removed && $(E2E_SUITE) -timeout 240m -run 'TestRealMasterRemovedUnderArgo' ./test/e2e/; fi
	@if [[ " $(E2E_CLUSTER) " == *" renewal "* ]]; then set -x; export BPA_REAL_DAY2=renewal && $(E2E_SUITE) -timeout 240m -run 'TestRealCertificateRenewalUnderArgo' ./test/e2e/; fi

.PHONY: test-update-golden
test-update-golden: ## Rewrite the golden files under testdata/.
	go test ./pkg/compile/ ./pkg/steps/renderinventory/ ./internal/cli/ ./charts/ -update

.PHONY: fuzz
fuzz: ## Fuzz the parsers of outside input (leases, manifests, package queries, artifact names, image lists, file paths, kubespray's download lists, nodes reports, Kubernetes versions, etcd's member lists, kubeadm's certificate lists, a release's .go-version, kubespray's kept facts, run-kubespray's progress lines) for FUZZTIME each.
	go test ./pkg/leases -run '^$$' -fuzz '^FuzzParseISC$$' -fuzztime $(FUZZTIME)
	go test ./internal/manifest -run '^$$' -fuzz '^FuzzRead$$' -fuzztime $(FUZZTIME)
	go test ./pkg/leases -run '^$$' -fuzz '^FuzzParseDnsmasq$$' -fuzztime $(FUZZTIME)
	go test ./pkg/steps/installsoftware -run '^$$' -fuzz '^FuzzParseDpkgQuery$$' -fuzztime $(FUZZTIME)
	go test ./pkg/steps/installsoftware -run '^$$' -fuzz '^FuzzParseRPMQuery$$' -fuzztime $(FUZZTIME)
	go test ./pkg/artifacts -run '^$$' -fuzz '^FuzzParseRef$$' -fuzztime $(FUZZTIME)
	go test ./internal/siteregistry -run '^$$' -fuzz '^FuzzParseImageList$$' -fuzztime $(FUZZTIME)
	go test ./internal/fileserver -run '^$$' -fuzz '^FuzzParsePath$$' -fuzztime $(FUZZTIME)
	go test ./internal/fileserver -run '^$$' -fuzz '^FuzzParseOCIPath$$' -fuzztime $(FUZZTIME)
	go test ./pkg/kubespraydownloads -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)
	go test ./pkg/steps/reportnodes -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)
	go test ./pkg/kubesprayreleases -run '^$$' -fuzz '^FuzzParseVersion$$' -fuzztime $(FUZZTIME)
	go test ./pkg/steps/checketcdmembers -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -parallel 1
	go test ./pkg/steps/readcertificates -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -parallel 1
	go test ./pkg/steps/readcertificates -run '^$$' -fuzz '^FuzzParseKubeadm$$' -fuzztime $(FUZZTIME) -parallel 1
	go test ./hack/kubespray-downloads -run '^$$' -fuzz '^FuzzParseGoVersion$$' -fuzztime $(FUZZTIME)
	go test ./hack/testsummary -run '^$$' -fuzz '^FuzzFilter$$' -fuzztime $(FUZZTIME)
	go test ./pkg/steps/runkubespray -run '^$$' -fuzz '^FuzzParseKeptFacts$$' -fuzztime $(FUZZTIME)
	go test ./pkg/steps/runkubespray -run '^$$' -fuzz '^FuzzParseProgress$$' -fuzztime $(FUZZTIME)

.PHONY: bench
bench: ## Run the benchmarks.
	go test ./... -run '^$$' -bench . -benchmem

##@ Build and run

.PHONY: build
build: ## Build the binary into bin/.
	go build -o $(BIN) ./cmd/bpa-workflow-controller

VERSION ?= v0.1.0
KEEP ?= 0
# The quick demo's deadline: room for a busy or slower machine than the 15 minutes it takes idle.
DEMO_TIMEOUT ?= 60m
CLUSTER ?=
IMAGE_REGISTRY ?=

.PHONY: image
image: ## Build the OCI images (controller, kubectl, registry) without Docker into the layout bin/images.
	VERSION=$(VERSION) hack/image.sh bin/images

.PHONY: image-push
image-push: image ## Push bin/images to IMAGE_REGISTRY (host[:port][/path]).
	@if [ -z "$(IMAGE_REGISTRY)" ]; then echo "image-push: set IMAGE_REGISTRY=host[:port][/path]"; exit 1; fi
	go run ./hack/image push -i bin/images --registry $(IMAGE_REGISTRY)

.PHONY: demo
demo: build ## The whole flow on a local control plane with Argo and test hosts (as root); KEEP=1 leaves it running; CLUSTER=real makes a real cluster with kubespray (about an hour); DEMO_TIMEOUT (60m) bounds it.
	KEEP=$(KEEP) CLUSTER=$(CLUSTER) DEMO_TIMEOUT=$(DEMO_TIMEOUT) hack/demo.sh

.PHONY: demo-down
demo-down: ## Stop what `make demo KEEP=1` left running.
	hack/demo.sh down

##@ Local control plane

.PHONY: control-plane
control-plane: ## Build etcd, kube-apiserver and kubectl from Go modules (cached by version) into bin/k8s.
	hack/control-plane.sh

.PHONY: dev-up
dev-up: ## Start etcd, kube-apiserver (127.0.0.1, data in bin/dev, kubeconfig bin/dev/kubeconfig) and Argo's workflow-controller.
	hack/dev.sh up

.PHONY: dev-down
dev-down: ## Stop them.
	hack/dev.sh down

.PHONY: install-crds
install-crds: ## Install our CRDs and policy, metal3's BareMetalHost CRD and Argo's CRDs where KUBECONFIG points.
	hack/dev.sh install-crds

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-z-]+:.*##/ { printf "  %-20s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)
