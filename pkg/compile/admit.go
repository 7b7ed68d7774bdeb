package compile

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	bpav1 "github.com/akraino-edge-stack/bpa-workflow-controller/api/v1alpha1"
	"github.com/akraino-edge-stack/bpa-workflow-controller/pkg/offline"
)

// admitted is what a Provisioning's admission against the site's options decides: the
// kubespray image its runs use, the offline mirror (nil online) and each KUD plugin's manifest.
type admitted struct {
	kubesprayImage string
	mirror         *offline.Mirror
	manifests      map[string]string
}

// admitProvisioning checks p against its own rules and the site administrator's options, and
// names every refused field at once.
func admitProvisioning(p *bpav1.Provisioning, opts Options) (admitted, error) {
	if errs := p.Validate(); len(errs) > 0 {
		return admitted{}, &bpav1.InvalidError{Kind: "Provisioning", Namespace: p.Namespace, Name: p.Name, Errs: errs}
	}
	if err := opts.validate(); err != nil {
		return admitted{}, err
	}
	a := admitted{kubesprayImage: KubesprayImageOf(p, opts), manifests: map[string]string{}}
	errs := siteRefusals(p, opts, a.kubesprayImage)
	mirror, ferr := opts.mirror(p, a.kubesprayImage)
	if ferr != nil {
		errs = append(errs, ferr)
	}
	a.mirror = mirror
	for i, plugin := range p.Spec.KUDPlugins {
		if mirror == nil {
			break
		}
		url, err := mirror.PluginManifest(plugin)
		if err != nil {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "KUDPlugins").Index(i), err.Error()))
			break
		}
		a.manifests[plugin] = url
	}
	if len(errs) > 0 {
		return admitted{}, &bpav1.InvalidError{Kind: "Provisioning", Namespace: p.Namespace, Name: p.Name, Errs: errs}
	}
	return a, nil
}

// siteRefusals are the fields of p the site administrator's options do not allow: an unknown
// plugin, hosts from a namespace not granted, a kubespray image not allowed.
func siteRefusals(p *bpav1.Provisioning, opts Options, kubesprayImage string) field.ErrorList {
	var errs field.ErrorList
	for i, plugin := range p.Spec.KUDPlugins {
		if !slices.Contains(opts.Plugins, plugin) {
			errs = append(errs, field.NotSupported(field.NewPath("spec", "KUDPlugins").Index(i), plugin, sortedCopy(opts.Plugins)))
		}
	}
	for i, ns := range p.HostNamespaces() {
		if ns != p.Namespace && !slices.Contains(opts.HostNamespaces, ns) {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "hostSelector", "namespaces").Index(i), fmt.Sprintf(
				"namespace %q is neither the Provisioning's own nor one the site administrator allows hosts to be taken from (%v)", ns, sortedCopy(opts.HostNamespaces))))
		}
	}
	if kubesprayImage != opts.KubesprayImage && !slices.Contains(opts.AllowedKubesprayImages, kubesprayImage) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "kubespray", "image"), fmt.Sprintf(
			"image %q is not one the site administrator allows for kubespray (the default %s, or one of %v)",
			kubesprayImage, opts.KubesprayImage, sortedCopy(opts.AllowedKubesprayImages))))
	}
	return errs
}
