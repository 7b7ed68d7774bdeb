ansible-playbook "$@" cluster.yml
status=$?
python3 /inputs/bpa_kubespray_facts.py save || echo "run-kubespray: the facts gathered were not kept: the next run gathers them again"
exit "$status"
