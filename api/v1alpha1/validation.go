package v1alpha1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The Go side of the CRD's validation. The API server refuses most bad input already; these
// checks repeat that for files the CLI reads, and add what a schema cannot say (map keys of
// package items, repeated labels and MACs, the cluster label), so that nothing reaches a shell
// or an inventory unvalidated.

var (
	macPattern            = regexp.MustCompile(`^([0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}$`)
	packageNamePattern    = regexp.MustCompile(PackageNamePattern)
	packageVersionPattern = regexp.MustCompile(PackageVersionPattern)
	extraVarNamePattern   = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
	imagePattern          = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._/-]*(:[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127})?(@sha256:[a-f0-9]{64})?$`)
	sshUserPattern        = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)
	// kubernetesVersionPattern is kubespray's kube_version: no leading v since kubespray v2.29,
	// and no leading zeros, which kubespray's checksum tables would not find.
	kubernetesVersionPattern = regexp.MustCompile(`^(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})$`)
	serialPercentPattern     = regexp.MustCompile(`^([1-9][0-9]?|100)%$`)
	serialCountPattern       = regexp.MustCompile(`^[1-9][0-9]{0,3}$`)
)

// IsImageReference reports whether s is a container image reference (name, optional tag,
// optional digest) and nothing that could read as an option or a shell word.
func IsImageReference(s string) bool { return len(s) <= 255 && imagePattern.MatchString(s) }

// IsSSHUser reports whether s is a Linux user name of at most 32 characters.
func IsSSHUser(s string) bool { return sshUserPattern.MatchString(s) }

// MaxClusterNameLength keeps names derived from the cluster ("<cluster>-known-hosts",
// "bpa-cluster-<cluster>") within the 63 characters of a label value.
const MaxClusterNameLength = 40

// ReservedHostLabels are names a host label may not take: Ansible's implicit groups and host
// (all, ungrouped, localhost) and the groups kubespray's inventory defines that a DNS-1123
// label could spell (etcd, bastion). A host named like a group makes ansible-inventory merge
// them: a worker labelled "all" drops every host's variables.
var ReservedHostLabels = []string{"all", "bastion", "etcd", "localhost", "ungrouped"}

// validateName checks metadata.name as the API server would: present, a DNS-1123 subdomain.
func validateName(name string) *field.Error {
	path := field.NewPath("metadata", "name")
	if name == "" {
		return field.Required(path, "every object has a name")
	}
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return field.Invalid(path, name, strings.Join(msgs, "; "))
	}
	return nil
}

// ValidateClusterLabel checks the required cluster label.
func ValidateClusterLabel(labels map[string]string) *field.Error {
	path := field.NewPath("metadata", "labels").Key(ClusterLabel)
	name, ok := labels[ClusterLabel]
	if !ok || name == "" {
		return field.Required(path, "names the cluster this CR belongs to")
	}
	if len(name) > MaxClusterNameLength {
		return field.TooLong(path, name, MaxClusterNameLength)
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return field.Invalid(path, name, strings.Join(errs, "; "))
	}
	return nil
}

// Validate checks a Provisioning.
func (p *Provisioning) Validate() field.ErrorList {
	var errs field.ErrorList
	if err := validateName(p.Name); err != nil {
		errs = append(errs, err)
	}
	if err := ValidateClusterLabel(p.Labels); err != nil {
		errs = append(errs, err)
	}
	spec := field.NewPath("spec")
	if len(p.Spec.Masters) == 0 {
		errs = append(errs, field.Required(spec.Child("masters"), "a cluster needs at least one master"))
	}
	errs = append(errs, validateEntries(spec.Child("masters"), p.Spec.Masters)...)
	errs = append(errs, validateEntries(spec.Child("workers"), p.Spec.Workers)...)
	errs = append(errs, validateRepeats(spec, p.Spec.Masters, p.Spec.Workers)...)

	seen := map[string]bool{}
	for i, name := range p.Spec.KUDPlugins {
		path := spec.Child("KUDPlugins").Index(i)
		if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 || len(name) > 40 {
			errs = append(errs, field.Invalid(path, name, "a plugin name is a DNS-1123 label of at most 40 characters (no paths)"))
		}
		if seen[name] {
			errs = append(errs, field.Duplicate(path, name))
		}
		seen[name] = true
	}
	if p.Spec.PodSubnet != "" {
		if _, err := netip.ParsePrefix(p.Spec.PodSubnet); err != nil {
			errs = append(errs, field.Invalid(spec.Child("PodSubnet"), p.Spec.PodSubnet, "must be a CIDR such as 10.244.64.0/18"))
		}
	}
	errs = append(errs, validateSSH(spec.Child("ssh"), p.Spec.SSH)...)
	if k := p.Spec.Kubespray; k != nil {
		path := spec.Child("kubespray")
		if k.Image != "" && !IsImageReference(k.Image) {
			errs = append(errs, field.Invalid(path.Child("image"), k.Image, "must be an image reference such as quay.io/kubespray/kubespray:v2.30.0"))
		}
		for _, name := range sortedKeys(k.ExtraVars) {
			vpath := path.Child("extraVars").Key(name)
			if !extraVarNamePattern.MatchString(name) || strings.HasPrefix(name, "ansible_") {
				errs = append(errs, field.Invalid(vpath, name, "extra variable names must match ^[a-z_][a-z0-9_]*$ and not start with ansible_"))
			}
			errs = append(errs, validateExtraVar(vpath, k.ExtraVars[name])...)
			if name == "kube_version" {
				errs = append(errs, field.Forbidden(vpath, "set spec.kubernetesVersion instead: the controller keeps the cluster's version and refuses the changes kubespray cannot make"))
			}
		}
	}
	if v := p.Spec.KubernetesVersion; v != "" && !kubernetesVersionPattern.MatchString(v) {
		errs = append(errs, field.Invalid(spec.Child("kubernetesVersion"), v, "must be a Kubernetes version as kubespray names it, such as 1.34.3"))
	}
	if u := p.Spec.Upgrade; u != nil {
		if _, err := u.WorkersPerWave(1); err != nil {
			errs = append(errs, field.Invalid(spec.Child("upgrade", "serial"), u.Serial.String(), err.Error()))
		}
		if a := u.Approval; a != "" && a != UpgradeApprovalNone && a != UpgradeApprovalPerWave {
			errs = append(errs, field.NotSupported(spec.Child("upgrade", "approval"), a, []UpgradeApproval{UpgradeApprovalNone, UpgradeApprovalPerWave}))
		}
	}
	if s := p.Spec.HostSelector; s != nil {
		for i, ns := range s.Namespaces {
			if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
				errs = append(errs, field.Invalid(spec.Child("hostSelector", "namespaces").Index(i), ns, strings.Join(msgs, "; ")))
			}
		}
	}
	return errs
}

// Bounds of one extra variable's value.
const (
	maxExtraVarDepth = 8
	maxExtraVarBytes = 16 << 10
)

// validateExtraVar checks one extra variable's value: JSON, at most maxExtraVarDepth levels
// and maxExtraVarBytes, and no Jinja2 delimiter in any string, key or value, at any depth (the
// path of an error names where).
func validateExtraVar(path *field.Path, v ExtraVarValue) field.ErrorList {
	if len(v.Raw) > maxExtraVarBytes {
		return field.ErrorList{field.TooLong(path, "", maxExtraVarBytes)}
	}
	dec := json.NewDecoder(bytes.NewReader(v.Raw))
	dec.UseNumber()
	var value any
	if err := dec.Decode(&value); err != nil {
		return field.ErrorList{field.Invalid(path, string(v.Raw), "must be JSON: "+err.Error())}
	}
	var errs field.ErrorList
	var walk func(p *field.Path, x any, depth int)
	walk = func(p *field.Path, x any, depth int) {
		if depth > maxExtraVarDepth {
			errs = append(errs, field.Invalid(p, "", fmt.Sprintf("extra variable values may be at most %d levels deep", maxExtraVarDepth)))
			return
		}
		switch x := x.(type) {
		case string:
			if hasJinja(x) {
				errs = append(errs, field.Invalid(p, x, "extra variable values may not contain Jinja2 delimiters ({{, {%, {#)"))
			}
		case []any:
			for i, e := range x {
				walk(p.Index(i), e, depth+1)
			}
		case map[string]any:
			for _, k := range sortedKeys(x) {
				if hasJinja(k) {
					errs = append(errs, field.Invalid(p.Key(k), k, "extra variable keys may not contain Jinja2 delimiters ({{, {%, {#)"))
				}
				walk(p.Key(k), x[k], depth+1)
			}
		}
	}
	walk(path, value, 1)
	return errs
}

func hasJinja(s string) bool {
	return strings.Contains(s, "{{") || strings.Contains(s, "{%") || strings.Contains(s, "{#")
}

func validateEntries(path *field.Path, entries []HostEntry) field.ErrorList {
	var errs field.ErrorList
	for i, entry := range entries {
		ipath := path.Index(i)
		if len(entry) != 1 {
			errs = append(errs, field.Invalid(ipath, len(entry), "an entry is a one-key map {label: {mac-address, cpu, memory, sriov, qat}}"))
			continue
		}
		for label, req := range entry {
			lpath := ipath.Key(label)
			if msgs := validation.IsDNS1123Label(label); len(msgs) > 0 {
				errs = append(errs, field.Invalid(lpath, label, "a host label must be a DNS-1123 label: "+strings.Join(msgs, "; ")))
				continue
			}
			if slices.Contains(ReservedHostLabels, label) {
				errs = append(errs, field.Invalid(lpath, label, "a host label may not be one of Ansible's or the inventory's reserved names "+strings.Join(ReservedHostLabels, ", ")))
				continue
			}
			if req.MACAddress != "" && !macPattern.MatchString(req.MACAddress) {
				errs = append(errs, field.Invalid(lpath.Child("mac-address"), req.MACAddress, "must be six colon-separated hex octets such as 00:c5:16:05:61:b2"))
			}
			if req.CPU != nil && *req.CPU < 1 {
				errs = append(errs, field.Invalid(lpath.Child("cpu"), *req.CPU, "must be at least 1"))
			}
			if req.Memory != nil && req.Memory.Sign() <= 0 {
				errs = append(errs, field.Invalid(lpath.Child("memory"), req.Memory.String(), "must be more than 0"))
			}
			if req.MACAddress == "" && req.CPU == nil && req.Memory == nil && !req.SRIOV && !req.QAT {
				errs = append(errs, field.Required(lpath, "an entry needs a mac-address, cpu, memory, sriov or qat to choose its host by"))
			}
		}
	}
	return errs
}

// validateRepeats allows one repeat only: the same label under masters and workers, with the
// same MAC if any, which is one node with both roles.
func validateRepeats(spec *field.Path, masters, workers []HostEntry) field.ErrorList {
	var errs field.ErrorList
	type seenEntry struct {
		path *field.Path
		mac  string
		list string
	}
	labels := map[string]seenEntry{}
	macs := map[string]seenEntry{}
	for _, list := range []struct {
		name    string
		entries []HostEntry
	}{{"masters", masters}, {"workers", workers}} {
		for i, entry := range list.entries {
			for label, req := range entry {
				path := spec.Child(list.name).Index(i).Key(label)
				mac := strings.ToLower(req.MACAddress)
				if prev, ok := labels[label]; ok {
					if prev.list == list.name || prev.mac != mac {
						errs = append(errs, field.Duplicate(path, label))
					}
					continue // a dual-role node: its MAC was recorded with the master
				}
				labels[label] = seenEntry{path: path, mac: mac, list: list.name}
				if mac == "" {
					continue
				}
				if prev, ok := macs[mac]; ok {
					errs = append(errs, field.Invalid(path.Child("mac-address"), req.MACAddress, fmt.Sprintf("the same MAC is already given to %s", prev.path)))
					continue
				}
				macs[mac] = seenEntry{path: path, mac: mac, list: list.name}
			}
		}
	}
	return errs
}

func validateSSH(path *field.Path, ssh *SSHAccess) field.ErrorList {
	if ssh == nil {
		return nil
	}
	var errs field.ErrorList
	if ssh.User != "" && !IsSSHUser(ssh.User) {
		errs = append(errs, field.Invalid(path.Child("user"), ssh.User, "must be a Linux user name matching ^[a-z_][a-z0-9_-]*$"))
	}
	if ref := ssh.SecretRef; ref != nil {
		if msgs := validation.IsDNS1123Subdomain(ref.Name); len(msgs) > 0 {
			errs = append(errs, field.Invalid(path.Child("secretRef", "name"), ref.Name, strings.Join(msgs, "; ")))
		}
		if ref.Key != "" {
			if msgs := validation.IsConfigMapKey(ref.Key); len(msgs) > 0 {
				errs = append(errs, field.Invalid(path.Child("secretRef", "key"), ref.Key, strings.Join(msgs, "; ")))
			}
		}
	}
	return errs
}

// Validate checks a Software.
func (s *Software) Validate() field.ErrorList {
	var errs field.ErrorList
	if err := validateName(s.Name); err != nil {
		errs = append(errs, err)
	}
	if err := ValidateClusterLabel(s.Labels); err != nil {
		errs = append(errs, err)
	}
	spec := field.NewPath("spec")
	errs = append(errs, validatePackages(spec.Child("masterSoftware"), s.Spec.MasterSoftware)...)
	errs = append(errs, validatePackages(spec.Child("workerSoftware"), s.Spec.WorkerSoftware)...)
	errs = append(errs, validateBinaries(spec.Child("masterBinaries"), s.Spec.MasterBinaries)...)
	errs = append(errs, validateBinaries(spec.Child("workerBinaries"), s.Spec.WorkerBinaries)...)
	errs = append(errs, validateSSH(spec.Child("ssh"), s.Spec.SSH)...)
	return errs
}

// validateBinaries checks what reaches a path on the node and a shell there: a name that is a
// single path element, a tag, and a directory none of whose elements is . or .. (the grammar
// of the site registry's artifacts, which the uploader and the step share).
func validateBinaries(path *field.Path, bins []BinaryPackage) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, b := range bins {
		ipath := path.Index(i)
		if ValidateArtifactName(b.Name) != nil {
			errs = append(errs, field.Invalid(ipath.Child("name"), b.Name, "a binary's name is lowercase letters and digits separated by single . _ or -, at most 63 characters (one path element on the node)"))
		}
		if b.Version != "" && ValidateArtifactVersion(b.Version) != nil {
			errs = append(errs, field.Invalid(ipath.Child("version"), b.Version, "a version is an OCI tag: letters, digits, _ . -, not starting with . or -, at most 128 characters"))
		}
		if b.Directory != "" && ValidateDirectory(b.Directory) != nil {
			errs = append(errs, field.Invalid(ipath.Child("directory"), b.Directory, "an absolute directory whose elements start with a letter, digit or _ (so none is . or ..) and hold only letters, digits and . _ + -"))
		}
		if seen[b.Name] {
			errs = append(errs, field.Duplicate(ipath.Child("name"), b.Name))
		}
		seen[b.Name] = true
	}
	return errs
}

func validatePackages(path *field.Path, pkgs []SoftwarePackage) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, pkg := range pkgs {
		ipath := path.Index(i)
		if !packageNamePattern.MatchString(pkg.Name) || len(pkg.Name) > PackageNameMaxLength {
			errs = append(errs, field.Invalid(ipath, pkg.Name, "a package name starts with a letter or digit, holds only letters, digits and . _ + -, and does not end with - (apt reads name- as remove it)"))
			continue
		}
		if pkg.Version != "" && (!packageVersionPattern.MatchString(pkg.Version) || len(pkg.Version) > PackageVersionMaxLength) {
			errs = append(errs, field.Invalid(ipath.Key(pkg.Name).Child("version"), pkg.Version, "a version starts with a letter or digit, holds only letters, digits and . + ~ : _ ^ -, and does not end with - (no Debian or RPM version does)"))
		}
		if seen[pkg.Name] {
			errs = append(errs, field.Duplicate(ipath, pkg.Name))
		}
		seen[pkg.Name] = true
	}
	return errs
}

// Validate checks a Cluster.
func (c *Cluster) Validate() field.ErrorList {
	var errs field.ErrorList
	if err := validateName(c.Name); err != nil {
		errs = append(errs, err)
	}
	if err := ValidateClusterLabel(c.Labels); err != nil {
		errs = append(errs, err)
	}
	spec := field.NewPath("spec")
	if c.Spec.ProvisioningCR == "" {
		errs = append(errs, field.Required(spec.Child("provisioningCR"), "names the cluster's Provisioning"))
	} else if msgs := validation.IsDNS1123Subdomain(c.Spec.ProvisioningCR); len(msgs) > 0 {
		errs = append(errs, field.Invalid(spec.Child("provisioningCR"), c.Spec.ProvisioningCR, strings.Join(msgs, "; ")))
	}
	if c.Spec.SoftwareCR != "" {
		if msgs := validation.IsDNS1123Subdomain(c.Spec.SoftwareCR); len(msgs) > 0 {
			errs = append(errs, field.Invalid(spec.Child("softwareCR"), c.Spec.SoftwareCR, strings.Join(msgs, "; ")))
		}
	}
	return errs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// InvalidError is a CR refused by Validate; it names every field and why, on one line.
// +kubebuilder:object:generate=false
type InvalidError struct {
	Kind, Namespace, Name string
	Errs                  field.ErrorList
}

func (e *InvalidError) Error() string {
	msgs := make([]string, len(e.Errs))
	for i, err := range e.Errs {
		msgs[i] = err.Error()
	}
	return fmt.Sprintf("%s %s/%s is invalid: %s", e.Kind, e.Namespace, e.Name, strings.Join(msgs, "; "))
}
