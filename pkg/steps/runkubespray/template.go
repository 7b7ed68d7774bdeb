// Package runkubespray is the run-kubespray step: ansible-playbook from the kubespray image,
// with the rendered inventory and extra variables as files and the SSH key mounted. Nothing is
// interpolated into a shell line: the command is an argument list.
package runkubespray

import (
	"fmt"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
)

// Name of the step, its template and its DAG task.
const Name = "run-kubespray"

// Mode is what kubespray does to the cluster.
type Mode string

// The kubespray modes.
const (
	// ModeCreate runs cluster.yml: a new cluster, or masters changed.
	ModeCreate Mode = "create"
	// ModeScale runs scale.yml limited to new nodes.
	ModeScale Mode = "scale"
	// ModeRemove runs remove-node.yml for nodes leaving.
	ModeRemove Mode = "remove"
)

// Plan is the kubespray run a Workflow does.
type Plan struct {
	Mode Mode
	// Nodes are the nodes scale.yml is limited to, or remove-node.yml removes.
	Nodes []string
}

// Args are ansible-playbook's arguments for the plan.
func (p Plan) Args() ([]string, error) {
	args := []string{
		"--inventory=" + steps.InputsDir + "/hosts.ini",
		"--private-key=" + steps.SSHKeyPath,
		"--become",
		"--extra-vars=@" + steps.InputsDir + "/extra-vars.json",
		// kubespray writes generated secrets (kubeadm's certificate key) under the inventory's
		// directory by default; the inputs are read-only, /tmp is the pod's scratch space.
		"--extra-vars=credentials_dir=" + CredentialsDir,
	}
	for _, n := range p.Nodes {
		if msgs := validation.IsDNS1123Label(n); len(msgs) > 0 {
			return nil, fmt.Errorf("kubespray node %q: %s", n, strings.Join(msgs, "; "))
		}
	}
	nodes := strings.Join(p.Nodes, ",")
	switch p.Mode {
	case ModeCreate, "":
		if len(p.Nodes) > 0 {
			return nil, fmt.Errorf("kubespray mode %q takes no nodes", ModeCreate)
		}
		return append(args, "cluster.yml"), nil
	case ModeScale:
		if len(p.Nodes) == 0 {
			return nil, fmt.Errorf("kubespray mode %q needs the nodes to add", p.Mode)
		}
		return append(args, "--limit="+nodes, "scale.yml"), nil
	case ModeRemove:
		if len(p.Nodes) == 0 {
			return nil, fmt.Errorf("kubespray mode %q needs the nodes to remove", p.Mode)
		}
		// The removal's variables come last: check-leaving-nodes chose them (RemovalVarsFile).
		return append(args, "--extra-vars=node="+nodes, "--extra-vars=skip_confirmation=true",
			"--extra-vars=@"+steps.InputsDir+"/"+RemovalVarsFile, "remove-node.yml"), nil
	}
	return nil, fmt.Errorf("unknown kubespray mode %q", p.Mode)
}

// KubesprayUser is the uid and gid the kubespray container runs as: "nobody" and "nogroup",
// which the upstream image's Ubuntu base has in /etc/passwd. OpenSSH's client refuses to run
// as a uid without a passwd entry, so the steps' 65532 (which that image lacks) would fail every
// connection; root is not needed (--become happens on the nodes). The pod's fsGroup still
// lets it read the mounted SSH key and known hosts.
const KubesprayUser int64 = 65534

// CredentialsDir is where kubespray writes the secrets it generates on the Ansible side.
const CredentialsDir = steps.TmpDir + "/credentials"

// RemovalVarsParam is a remove run's input: remove-node.yml's variables as check-leaving-nodes
// chose them (JSON), given to ansible-playbook as the file RemovalVarsFile.
const (
	RemovalVarsParam = "removal-vars"
	RemovalVarsFile  = "removal-vars.json"
)

// Template runs the plan from the kubespray image. Ansible checks every node's host key
// strictly against the known_hosts file pin-host-keys wrote into the cluster's known-hosts
// Secret (mounted read-only), never against what a node presents the first time. The pod calls
// no API: it mounts no ServiceAccount token.
func Template(kubesprayImage string, plan Plan) (wfv1.Template, error) {
	args, err := plan.Args()
	if err != nil {
		return wfv1.Template{}, err
	}
	c := steps.Container(kubesprayImage, []string{"ansible-playbook"}, args, steps.SSHKeyMount(), steps.KnownHostsMount())
	// The upstream image's working directory: ansible reads kubespray's ansible.cfg from it.
	c.WorkingDir = "/kubespray"
	c.SecurityContext.RunAsUser = ptr.To(KubesprayUser)
	c.SecurityContext.RunAsGroup = ptr.To(KubesprayUser)
	c.Env = append(c.Env,
		corev1.EnvVar{Name: "ANSIBLE_LOCAL_TEMP", Value: steps.TmpDir + "/.ansible/tmp"},
		corev1.EnvVar{Name: "ANSIBLE_HOST_KEY_CHECKING", Value: "True"},
		// Replaces the image's ansible.cfg ssh_args (kubespray's sets UserKnownHostsFile=/dev/null)
		// and keeps its connection sharing and retries.
		corev1.EnvVar{Name: "ANSIBLE_SSH_ARGS", Value: SSHArgs(steps.KnownHostsPath)},
		corev1.EnvVar{Name: "ANSIBLE_FORCE_COLOR", Value: "False"},
	)
	inputs := wfv1.Inputs{
		Parameters: []wfv1.Parameter{{Name: steps.InventoryParam}, {Name: steps.ExtraVarsParam}},
		Artifacts: []wfv1.Artifact{
			steps.InputFile(steps.InventoryParam, "hosts.ini"),
			steps.InputFile(steps.ExtraVarsParam, "extra-vars.json"),
		},
	}
	if plan.Mode == ModeRemove {
		inputs.Parameters = append(inputs.Parameters, wfv1.Parameter{Name: RemovalVarsParam})
		inputs.Artifacts = append(inputs.Artifacts, steps.InputFile(RemovalVarsParam, RemovalVarsFile))
	}
	t := wfv1.Template{
		Name:          Name,
		Inputs:        inputs,
		Container:     c,
		RetryStrategy: steps.RetryFlakes(),
	}
	steps.NoToken(&t)
	return t, nil
}

// SSHArgs are the ssh options Ansible runs kubespray with: host keys only from knownHosts,
// strictly.
func SSHArgs(knownHosts string) string {
	return "-o UserKnownHostsFile=" + knownHosts + " -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes" +
		" -o ControlMaster=auto -o ControlPersist=30m -o ConnectionAttempts=100"
}

// String says what the plan runs, for events and descriptions: "cluster.yml",
// "scale.yml for worker-3".
func (p Plan) String() string {
	switch p.Mode {
	case ModeScale:
		return "scale.yml for " + strings.Join(p.Nodes, ", ")
	case ModeRemove:
		return "remove-node.yml for " + strings.Join(p.Nodes, ", ")
	}
	return "cluster.yml"
}
