limit=$1
playbook=$2
shift 2
facts=/inputs/bpa_kubespray_facts.py
gather=$(python3 "$facts" restore "$limit")
case $? in
0) ;;
3) exit 3 ;;
*)
	echo "run-kubespray: the kept facts could not be read: every node's are gathered"
	gather=all
	;;
esac
if [ -n "$gather" ]; then
	echo "run-kubespray: playbooks/facts.yml for $gather first: $playbook --limit=$limit needs the others' facts in kubespray's fact cache"
	# Preparing: the step's progress (Argo's) is the playbook's below.
	ARGO_PROGRESS_FILE='' ansible-playbook "$@" --limit="$gather" playbooks/facts.yml || exit
fi
ansible-playbook "$@" --limit="$limit" "$playbook"
status=$?
python3 "$facts" save || echo "run-kubespray: the facts gathered were not kept: the next run gathers them again"
exit "$status"
