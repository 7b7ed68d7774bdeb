limit=$1
shift
playbook="${TMPDIR:-/tmp}/bpa-reset-failed-joins.yml"
cat > "$playbook" <<'PLAYBOOK'
PLAYBOOK
echo "run-kubespray: masters $limit join the control plane; a join an earlier attempt left half done is reset first"
# Preparing: the step's progress (Argo's) is cluster.yml's.
ARGO_PROGRESS_FILE='' ansible-playbook "$@" --limit="$limit" "$playbook" || exit
ansible-playbook "$@" cluster.yml
status=$?
python3 /inputs/bpa_kubespray_facts.py save || echo "run-kubespray: the facts gathered were not kept: the next run gathers them again"
exit "$status"
