// Package checksitemirror is the check of an offline site's mirror, before a Provisioning's run
// touches any host: the real kubespray says what it will fetch for this run (its download role,
// evaluated with the run's inventory and extra variables by list-kubespray-downloads, in the
// kubespray image), and check-site-mirror asks the mirror for each file and image, failing with
// the whole list of what is missing, and of what would come from outside the mirror.
package checksitemirror

import (
	"encoding/base64"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/kubespraydownloads"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/steps/runkubespray"
)

// Names of the two templates and their DAG tasks.
const (
	ListName = "list-kubespray-downloads"
	Name     = "check-site-mirror"
)

// DownloadsParam is the list, as kubespraydownloads.Playbook wrote it: ListName's output,
// Name's input.
const DownloadsParam = "kubespray-downloads"

// playbookFile is kubespraydownloads.Playbook, base64: a raw artifact's data goes through
// Argo's own {{...}} templating, which the playbook's Jinja would not survive.
const playbookFile = "kubespray-downloads.yml.b64"

// listScript decodes the playbook into the pod's /tmp and runs it with the arguments given
// ($@); it is constant, nothing reaches it as shell text.
const listScript = `base64 -d < ` + steps.InputsDir + "/" + playbookFile + ` > ` + steps.TmpDir + `/kubespray-downloads.yml || exit
exec ansible-playbook "$@" ` + steps.TmpDir + `/kubespray-downloads.yml
`

// ListTemplate runs kubespraydownloads.Playbook from the kubespray image with the run's
// inventory and extra variables, as run-kubespray runs kubespray (nobody, read-only root,
// kubespray's working directory and Ansible environment). It contacts no node: it needs no SSH
// key, no known hosts and no token.
func ListTemplate(kubesprayImage string) wfv1.Template {
	args := []string{ListName,
		"--inventory=" + steps.InputsDir + "/hosts.ini",
		"--extra-vars=@" + steps.InputsDir + "/extra-vars.json",
		"--extra-vars=" + kubespraydownloads.DirVar + "=" + steps.OutputsDir,
	}
	c := steps.Container(kubesprayImage, []string{"/bin/sh", "-c", listScript}, args)
	c.WorkingDir = "/kubespray"
	c.SecurityContext.RunAsUser = ptr.To(runkubespray.KubesprayUser)
	c.SecurityContext.RunAsGroup = ptr.To(runkubespray.KubesprayUser)
	c.Env = append(c.Env, runkubespray.AnsibleEnv()...)
	t := wfv1.Template{
		Name: ListName,
		Inputs: wfv1.Inputs{
			Parameters: []wfv1.Parameter{{Name: steps.InventoryParam}, {Name: steps.ExtraVarsParam}},
			Artifacts: []wfv1.Artifact{
				steps.InputFile(steps.InventoryParam, "hosts.ini"),
				steps.InputFile(steps.ExtraVarsParam, "extra-vars.json"),
				{Name: "playbook", Path: steps.InputsDir + "/" + playbookFile, ArtifactLocation: wfv1.ArtifactLocation{
					Raw: &wfv1.RawArtifact{Data: base64.StdEncoding.EncodeToString(kubespraydownloads.Playbook)},
				}},
			},
		},
		Container:     c,
		Outputs:       wfv1.Outputs{Parameters: []wfv1.Parameter{steps.OutputFile(DownloadsParam, kubespraydownloads.File)}},
		RetryStrategy: steps.RetryFlakes(),
	}
	steps.NoToken(&t)
	return t
}

// Template asks the mirror (its URL as the nodes reach it) for every download in the list. An
// unreachable mirror is waited for (retryable); a missing file or image fails at once: uploading
// it is someone's job, and the Workflow's retry (argo retry) checks again.
func Template(stepImage, mirrorURL string) wfv1.Template {
	t := wfv1.Template{
		Name: Name,
		Inputs: wfv1.Inputs{
			Parameters: []wfv1.Parameter{{Name: DownloadsParam}},
			Artifacts:  []wfv1.Artifact{steps.InputFile(DownloadsParam, kubespraydownloads.File)},
		},
		Container: steps.StepContainer(stepImage, Name, []string{
			"--downloads=" + steps.InputsDir + "/" + kubespraydownloads.File,
			"--mirror=" + mirrorURL,
		}),
		RetryStrategy: steps.WaitForTheWorld(),
	}
	steps.NoToken(&t)
	return t
}
