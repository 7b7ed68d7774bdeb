#!/usr/bin/env bash
# The demo, for now: the pure core on the sample site. Every sample Provisioning is placed on
# the site's BareMetalHosts with IPs from the ISC lease file, then the samples are compiled into
# the Argo Workflows the controller will create.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=bin/bpa-workflow-controller
site=config/samples/site

for cr in config/samples/provisioning-*.yaml; do
  echo "=== plan $cr (IPs from $site/sample-site-dhcpd.leases)"
  "$bin" plan -f "$cr" --hosts "$site/sample-site-baremetalhosts.yaml" --leases "$site/sample-site-dhcpd.leases" -o text
  echo
done

echo "=== compile config/samples/provisioning-cluster-efg-kud-plugins.yaml"
"$bin" compile -f config/samples/provisioning-cluster-efg-kud-plugins.yaml
echo
echo "=== compile config/samples/software-cluster-xyz.yaml (DAG only)"
"$bin" compile -f config/samples/software-cluster-xyz.yaml -o json | python3 -c '
import json, sys
wf = json.load(sys.stdin)
print("Workflow", wf["metadata"]["name"], "labels", wf["metadata"]["labels"])
for t in wf["spec"]["templates"][0]["dag"]["tasks"]:
    print("  task %-22s depends %-34s %s" % (t["name"], t.get("depends", "-"), ("withParam " + t["withParam"]) if "withParam" in t else ""))
'
echo
echo "=== a CR the compiler refuses (the sample with a plugin that has no WorkflowTemplate)"
sed 's/- onap4k8s/- not-a-plugin/' config/samples/provisioning-cluster-efg-kud-plugins.yaml > bin/demo-bad.yaml
if "$bin" compile -f bin/demo-bad.yaml >/dev/null; then echo "unexpectedly compiled" >&2; exit 1; fi
