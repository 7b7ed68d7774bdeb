package runkubespray

import (
	_ "embed"
	"fmt"
	"strings"
)

// The step's scripts and playbooks are files of its folder (scripts/, playbooks/), embedded as
// they are: shellcheck and ansible-playbook --syntax-check read the same files in the tests
// (TestScriptsPassShellcheck, TestPlaybooksPassSyntaxCheck). Each script is constant: a
// limit ($1) and ansible-playbook's arguments arrive as positional parameters, never as shell
// text.

// LimitedScript is a playbook ($2) limited to some nodes ($1), as a scale run (scale.yml) and
// each upgrade wave (upgrade-cluster.yml) run it. kubespray (since v2.27) refuses --limit
// unless the facts of every node the limit leaves out are in its fact cache, and the pod's
// starts empty: the script restores the facts the controller kept (FactsHelper), gathers with
// kubespray's facts.yml only those of the nodes outside the limit that are missing or stale,
// runs the playbook, and saves what it gathered for the next run. Kept facts that cannot be
// read make it gather every node's, as kubespray's docs/operations/nodes.md prescribes.
//
//go:embed scripts/limited.sh
var LimitedScript string

// ClusterScript is cluster.yml, then the facts it gathered saved for the next run.
//
//go:embed scripts/cluster.sh
var ClusterScript string

// RenewCertificatesPlaybook is kubespray's own renewal of the control plane's certificates,
// the steps of the k8s-certs-renew.sh its auto_renew_certificates timer runs on each master
// (roles/kubernetes/control-plane/templates): kubeadm renews every certificate it manages, the
// control plane's static pods are removed so that the kubelet starts them again on the renewed
// files, and the master's API server serves again before the next master's turn. Unlike the
// script, which ignores a removal that fails, each pod is removed until it is gone: a busy
// master fails removals two ways (a timeout, the kubelet removing the same container), and a
// pod left running keeps the old certificates. Run on demand, for every master, a master at a
// time, stopping at the first that fails. kubespray has no playbook for it: its
// upgrade-cluster.yml at the cluster's own version (kubeadm upgrade apply with certificate
// renewal) renews only admin.conf and super-admin.conf, since kubeadm skips, certificates and
// all, each component whose manifest is unchanged (kubeadm's phases/upgrade/staticpods.go).
//
//go:embed playbooks/renew-certificates.yml
var RenewCertificatesPlaybook string

// RenewCertificatesPlaybookFile is the name RenewCertificatesScript writes the playbook under,
// in the pod's scratch space ($TMPDIR, /tmp by default).
const RenewCertificatesPlaybookFile = "bpa-renew-certificates.yml"

//go:embed scripts/renew-certificates.sh
var renewCertificatesScript string

// RenewCertificatesScript writes RenewCertificatesPlaybook and runs it limited to the task's
// limit ($1), with ansible-playbook's arguments after it.
var RenewCertificatesScript = withPlaybook(renewCertificatesScript, RenewCertificatesPlaybook)

// ResetFailedJoinsPlaybook resets, on a master cluster.yml is adding, a join that an earlier
// attempt left half done: the control plane's manifests written, yet the cluster without the
// node as a control-plane node. kubespray's own join (up to v2.31) retries kubeadm join in
// place, and every retry fails kubeadm's preflight on the files the first attempt wrote;
// cluster.yml run again skips the join (it sees the kubelet's configuration) and waits in vain
// for the node's control-plane role. kubeadm reset clears the node for a new join, as
// kubespray's later releases do between attempts. A first attempt finds nothing to reset, and
// a master the cluster already counts is never touched, nor is the first master (the one
// kubeadm initialises the cluster on, whom the playbook asks). A first join fails so on a slow
// machine, for one when its kubelet's TLS bootstrap (against the joining master's own API
// server, still starting) outlasts kubeadm's 5 minutes. The masters of a new cluster join too,
// before kubespray's bootstrap has installed Python on them: the first task is raw, and the
// others run only where a join has been, which came after the bootstrap. raw's answer is read
// line by line: sudo's warning about the node's name, in the same output, would hide it
// otherwise.
//
//go:embed playbooks/reset-failed-joins.yml
var ResetFailedJoinsPlaybook string

// ResetFailedJoinsPlaybookFile is the name ResetFailedJoinsScript writes the playbook under, in
// the pod's scratch space.
const ResetFailedJoinsPlaybookFile = "bpa-reset-failed-joins.yml"

//go:embed scripts/reset-failed-joins.sh
var resetFailedJoinsScript string

// ResetFailedJoinsScript is a cluster.yml that adds masters: ResetFailedJoinsPlaybook limited
// to them ($1), then cluster.yml, with ansible-playbook's arguments after the masters.
var ResetFailedJoinsScript = withPlaybook(resetFailedJoinsScript, ResetFailedJoinsPlaybook)

// emptyHeredoc is where a script that runs one of the step's own playbooks writes it: the
// script's file holds the heredoc empty, and the playbook's file fills it.
const emptyHeredoc = "<<'PLAYBOOK'\nPLAYBOOK\n"

// withPlaybook is script with playbook in its heredoc. The script is a file of this folder:
// one without exactly one empty heredoc is a mistake no input can make, found by every test.
func withPlaybook(script, playbook string) string {
	if n := strings.Count(script, emptyHeredoc); n != 1 {
		panic(fmt.Sprintf("run-kubespray: a script for a playbook holds %d empty heredocs, want 1:\n%s", n, script))
	}
	return strings.Replace(script, emptyHeredoc, "<<'PLAYBOOK'\n"+playbook+"PLAYBOOK\n", 1)
}
