limit=$1
shift
playbook="${TMPDIR:-/tmp}/bpa-reset-failed-joins.yml"
cat > "$playbook" <<'PLAYBOOK'
PLAYBOOK
echo "run-kubespray: masters $limit join the control plane; a join an earlier attempt left half done is reset first"
ansible-playbook "$@" --limit="$limit" "$playbook" || exit
exec ansible-playbook "$@" cluster.yml
