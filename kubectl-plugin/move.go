package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// Mover moves claims' volumes from one node's pool to another's (docs/moving.md): copies while
// their pods run, stops the workloads, has the destination finish the copy and take the volume,
// re-points each PersistentVolume at the new node, and starts the workloads again. Every step
// leaves what it did in the cluster (annotations, the volume's pools), so a run cut at any point
// is finished by running the same command again.
type Mover struct {
	Kube            kubernetes.Interface
	Exec            PodExec
	Out             io.Writer
	DriverNamespace string
	PodSelector     string
	Repoint         RepointMode
	// Bounds each wait: the workloads' pods gone, the source node letting go of a volume, a claim bound.
	Timeout time.Duration
	Poll    time.Duration
	// Passed to each copy while the pods run: --rounds, --until-below.
	CopyArgs []string
}

// claimMove is one claim's move as the cluster shows it when the run begins.
type claimMove struct {
	claim  types.NamespacedName
	pvName string
	handle string
	// The node whose pool holds the volume; empty once its PersistentVolume names the destination
	// (or is being re-created, which happens only after the destination took the volume).
	from string
	// Whether the volume is on the destination with no move of it under way: nothing to do.
	already bool
}

func (c claimMove) String() string { return "claim " + c.claim.String() }

// MoveClaims moves the volumes of the given claims to node `to`, stopping their workloads once
// for all of them.
func (m *Mover) MoveClaims(ctx context.Context, claims []types.NamespacedName, to string) error {
	if err := m.checkNode(ctx, to); err != nil {
		return err
	}
	var moves []claimMove
	for _, claim := range claims {
		mv, err := m.plan(ctx, claim, to)
		switch {
		case err != nil:
			return err
		case mv.already:
			fmt.Fprintf(m.Out, "%s: volume %s is on node %s already\n", mv, mv.handle, to)
		default:
			moves = append(moves, mv)
		}
	}
	for _, mv := range moves {
		notes := map[string]*string{annotationMovingTo: &to}
		if mv.from != "" {
			notes[annotationMovingFrom] = &mv.from
		}
		if err := m.annotateClaim(ctx, mv.claim, notes); err != nil {
			return err
		}
	}
	for _, mv := range moves {
		if mv.from == "" {
			continue
		}
		fmt.Fprintf(m.Out, "%s: copying volume %s from node %s to node %s while its pods run\n",
			mv, mv.handle, mv.from, to)
		if err := m.runMove(ctx, mv, to, m.CopyArgs); err != nil {
			return err
		}
	}
	if err := m.stopWorkloads(ctx, moves); err != nil {
		return err
	}
	for _, mv := range moves {
		if mv.from != "" {
			fmt.Fprintf(m.Out, "%s: its pods stopped: copying what changed last, then node %s takes volume %s\n",
				mv, to, mv.handle)
			if err := m.finish(ctx, mv, to); err != nil {
				return err
			}
		}
		if err := m.repoint(ctx, mv, to); err != nil {
			return err
		}
		if err := m.annotateClaim(ctx, mv.claim, map[string]*string{annotationSelectedNode: &to}); err != nil {
			return err
		}
	}
	if err := m.startWorkloads(ctx, moves); err != nil {
		return err
	}
	for _, mv := range moves {
		if err := m.annotateClaim(ctx, mv.claim, map[string]*string{
			annotationMovingTo: nil, annotationMovingFrom: nil, annotationStopped: nil, annotationReplacement: nil,
			annotationFinalStarted: nil,
		}); err != nil {
			return err
		}
		fmt.Fprintf(m.Out, "%s: volume %s is on node %s\n", mv, mv.handle, to)
	}
	return nil
}

// ClaimsOn lists the claims whose blockpool volumes node `from` holds: what --all-from moves.
func (m *Mover) ClaimsOn(ctx context.Context, from string) ([]types.NamespacedName, error) {
	pvs, err := m.Kube.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list PersistentVolumes: %w", err)
	}
	var claims []types.NamespacedName
	for _, pv := range pvs.Items {
		if !isBlockpool(&pv) || volumeNode(&pv) != from {
			continue
		}
		if ref := pv.Spec.ClaimRef; ref != nil && pv.Status.Phase == corev1.VolumeBound {
			claims = append(claims, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name})
		} else {
			fmt.Fprintf(m.Out, "PersistentVolume %s on node %s is bound to no claim (%s): left where it is\n",
				pv.Name, from, pv.Status.Phase)
		}
	}
	// a claim whose move off the node a cut run left with its PersistentVolume deleted
	pvcs, err := m.Kube.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list PersistentVolumeClaims: %w", err)
	}
	for _, claim := range pvcs.Items {
		key := types.NamespacedName{Namespace: claim.Namespace, Name: claim.Name}
		if claim.Annotations[annotationMovingFrom] == from && !slices.Contains(claims, key) {
			claims = append(claims, key)
		}
	}
	sort.Slice(claims, func(i, j int) bool { return claims[i].String() < claims[j].String() })
	return claims, nil
}

func (m *Mover) checkNode(ctx context.Context, name string) error {
	if _, err := m.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil {
		return fmt.Errorf("node %s: %w", name, err)
	}
	_, err := m.pluginPod(ctx, name)
	return err
}

// plan reads where a claim's move stands.
func (m *Mover) plan(ctx context.Context, key types.NamespacedName, to string) (claimMove, error) {
	claim, err := m.Kube.CoreV1().PersistentVolumeClaims(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
	if err != nil {
		return claimMove{}, fmt.Errorf("claim %s: %w", key, err)
	}
	mv := claimMove{claim: key, pvName: claim.Spec.VolumeName}
	if mv.pvName == "" {
		return mv, fmt.Errorf("%s is not bound to a volume yet: there is nothing to move", mv)
	}
	if under := claim.Annotations[annotationMovingTo]; under != "" && under != to {
		if claim.Annotations[annotationFinalStarted] != "" {
			return mv, fmt.Errorf("%s is being moved to node %s, whose last copy has begun: finish that move "+
				"(run it again with --to %s) before moving it elsewhere", mv, under, under)
		}
		fmt.Fprintf(m.Out, "%s: moving to node %s instead of %s, whose copy is left to its pool's reconcile\n",
			mv, to, under)
	}
	pv, err := m.Kube.CoreV1().PersistentVolumes().Get(ctx, mv.pvName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) && claim.Annotations[annotationReplacement] != "":
		// deleted to be re-created on the new node: the destination has the volume already
		replacement, err := savedReplacement(claim)
		if err != nil {
			return mv, err
		}
		mv.handle = replacement.Spec.CSI.VolumeHandle
		return mv, nil
	case err != nil:
		return mv, fmt.Errorf("%s: its PersistentVolume %s: %w", mv, mv.pvName, err)
	}
	if !isBlockpool(pv) {
		return mv, fmt.Errorf("%s: its PersistentVolume %s is not a volume of %s", mv, pv.Name, driverName)
	}
	mv.handle = pv.Spec.CSI.VolumeHandle
	node := volumeNode(pv)
	switch {
	case node == "":
		return mv, fmt.Errorf("%s: its PersistentVolume %s is not pinned to one node by %s: a volume of a "+
			"shared pool is reachable from every node and never moves", mv, pv.Name, topologyKey)
	case node == to:
		mv.already = claim.Annotations[annotationMovingTo] == ""
		return mv, nil // moved, or re-pointed by a run cut before it started the workloads again
	case pv.DeletionTimestamp != nil && claim.Annotations[annotationReplacement] != "":
		return mv, nil // being re-created
	}
	mv.from = node
	return mv, nil
}

// runMove runs blockpool-csi move for one claim in the destination node's plugin pod; the exit code.
func (m *Mover) runMove(ctx context.Context, mv claimMove, to string, extra []string) error {
	code, err := m.execMove(ctx, mv, to, extra)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("%s: blockpool-csi move on node %s failed (exit code %d, its words above); "+
			"the volume is intact on node %s: run this again once the cause is fixed", mv, to, code, mv.from)
	}
	return nil
}

func (m *Mover) execMove(ctx context.Context, mv claimMove, to string, extra []string) (int, error) {
	dest, err := m.pluginPod(ctx, to)
	if err != nil {
		return 0, err
	}
	source, err := m.pluginPod(ctx, mv.from)
	if err != nil {
		return 0, err
	}
	peer, err := peerAddress(source)
	if err != nil {
		return 0, err
	}
	args := containerArgs(dest)
	command := append([]string{"blockpool-csi", "move",
		"--pool-dir", args.value("--pool-dir", defaultPoolDir),
		"--node-id", to,
		"--peer-ca-dir", args.value("--peer-ca-dir", defaultPeerCADir),
		"--from", mv.from + "=" + peer,
		"--volume", mv.handle}, extra...)
	return m.Exec.Run(ctx, dest, driverContainer, command, prefixed(m.Out, "  node "+to+": "))
}

// finish runs the last copy and the hand-over: blockpool-csi move --final, again while the source
// node still holds the volume (kubelet unstages it a moment after the pod is gone). Only that
// waiting is bounded by --timeout: the copy itself takes what the bytes take.
func (m *Mover) finish(ctx context.Context, mv claimMove, to string) error {
	started := "true"
	if err := m.annotateClaim(ctx, mv.claim, map[string]*string{annotationFinalStarted: &started}); err != nil {
		return err
	}
	giveUp := time.Now().Add(m.Timeout)
	for {
		code, err := m.execMove(ctx, mv, to, []string{"--final"})
		switch {
		case err != nil:
			return err
		case code == 0:
			return nil
		case code != exitInUseOnSource:
			return fmt.Errorf("%s: blockpool-csi move --final on node %s failed (exit code %d, its words above): "+
				"run this again once the cause is fixed", mv, to, code)
		case time.Now().After(giveUp):
			return fmt.Errorf("gave up after %s waiting for node %s to let go of volume %s: run this again to go on",
				m.Timeout, mv.from, mv.handle)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(m.Poll):
		}
	}
}

// pluginPod is the node plugin's Running pod on a node.
func (m *Mover) pluginPod(ctx context.Context, node string) (*corev1.Pod, error) {
	pods, err := m.Kube.CoreV1().Pods(m.DriverNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: m.PodSelector, FieldSelector: "spec.nodeName=" + node,
	})
	if err != nil {
		return nil, fmt.Errorf("list the node plugin's pods in %s: %w", m.DriverNamespace, err)
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Spec.NodeName == node && pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil {
			return pod, nil
		}
	}
	return nil, fmt.Errorf("no Running pod of the node plugin (%s in namespace %s) on node %s: "+
		"a volume moves only between nodes whose plugin runs", m.PodSelector, m.DriverNamespace, node)
}

// annotateClaim sets (or, for nil, removes) annotations of a claim.
func (m *Mover) annotateClaim(ctx context.Context, claim types.NamespacedName, values map[string]*string) error {
	_, err := m.Kube.CoreV1().PersistentVolumeClaims(claim.Namespace).Patch(ctx, claim.Name,
		types.MergePatchType, annotationsPatch(values), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("annotate claim %s: %w", claim, err)
	}
	return nil
}

func (m *Mover) waitFor(ctx context.Context, what string, done wait.ConditionWithContextFunc) error {
	err := wait.PollUntilContextTimeout(ctx, m.Poll, m.Timeout, true, done)
	if wait.Interrupted(err) {
		return fmt.Errorf("gave up after %s waiting for %s: run this again to go on", m.Timeout, what)
	}
	return err
}

func isBlockpool(pv *corev1.PersistentVolume) bool {
	return pv.Spec.CSI != nil && pv.Spec.CSI.Driver == driverName
}

// volumeNode is the one node a PersistentVolume's node affinity pins it to by the driver's
// topology key; empty when it names none, or several.
func volumeNode(pv *corev1.PersistentVolume) string {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return ""
	}
	nodes := map[string]bool{}
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, expr := range term.MatchExpressions {
			if expr.Key == topologyKey && expr.Operator == corev1.NodeSelectorOpIn {
				for _, v := range expr.Values {
					nodes[v] = true
				}
			}
		}
	}
	if len(nodes) != 1 {
		return ""
	}
	for node := range nodes {
		return node
	}
	return ""
}

// peerAddress is where a node plugin pod serves the peer channel: its pod IP and the port named peer.
func peerAddress(pod *corev1.Pod) (string, error) {
	for _, c := range pod.Spec.Containers {
		if c.Name != driverContainer {
			continue
		}
		for _, p := range c.Ports {
			if p.Name == peerPortName && pod.Status.PodIP != "" {
				host := pod.Status.PodIP
				if strings.Contains(host, ":") {
					host = "[" + host + "]"
				}
				return fmt.Sprintf("%s:%d", host, p.ContainerPort), nil
			}
		}
	}
	return "", fmt.Errorf("pod %s/%s on node %s serves no peer channel (no pod IP, or no port %q on its %s "+
		"container): a pool on every node needs it to move volumes (docs/peers.md)",
		pod.Namespace, pod.Name, pod.Spec.NodeName, peerPortName, driverContainer)
}
