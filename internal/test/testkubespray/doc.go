// Package testkubespray runs the real kubespray (the image hack/kubespray-image.sh builds from
// ../shared/third_party) for the suites that put it on the site's machines: a playbook run as
// the compiled run-kubespray step runs it, what kubespray installs from the site's package
// mirror, how its output and the cluster it made are read, and the figures the runs record.
// The virtual-machine suite (test/vm) runs kubespray by hand through it; the end-to-end suite
// (test/e2e) runs it through the controller and Argo and uses it for the site around the run.
package testkubespray
