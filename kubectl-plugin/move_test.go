package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

const handle = "vol-0123456789abcdef"

var claimKey = types.NamespacedName{Namespace: "default", Name: "data-web-0"}

// fakeExec answers blockpool-csi move as a node plugin would, from a list of exit codes per step.
type fakeExec struct {
	calls     [][]string
	finals    []int         // exit codes of successive --final runs; 0 once used up
	finalTook time.Duration // how long each --final runs, its context permitting
}

func (f *fakeExec) Run(ctx context.Context, pod *corev1.Pod, container string, command []string, _ io.Writer) (int, error) {
	f.calls = append(f.calls, append([]string{pod.Spec.NodeName, container}, command...))
	if slices.Contains(command, "--final") && f.finalTook > 0 {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(f.finalTook):
		}
	}
	if slices.Contains(command, "--final") && len(f.finals) > 0 {
		code := f.finals[0]
		f.finals = f.finals[1:]
		return code, nil
	}
	return 0, nil
}

func (f *fakeExec) steps() []string {
	var out []string
	for _, c := range f.calls {
		step := "copy"
		if slices.Contains(c, "--final") {
			step = "final"
		}
		out = append(out, c[0]+":"+step)
	}
	return out
}

func pluginPod(node, ip string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "blockpool-node-" + node, Namespace: defaultDriverNamespace,
			Labels: map[string]string{"app.kubernetes.io/name": "blockpool-node"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{
			Name:  driverContainer,
			Args:  []string{"--pool-dir=/var/lib/blockpool", "--node-id=$(KUBE_NODE_NAME)"},
			Ports: []corev1.ContainerPort{{Name: peerPortName, ContainerPort: 9810}},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip},
	}
}

func pv(node string, policy corev1.PersistentVolumeReclaimPolicy) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-1", Finalizers: []string{"kubernetes.io/pv-protection"},
			Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": driverName}},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: policy,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: driverName, VolumeHandle: handle, FSType: "ext4"}},
			ClaimRef: &corev1.ObjectReference{Namespace: "default", Name: "data-web-0", UID: "claim-uid"},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: topologyKey, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
	}
}

func claim(annotations map[string]string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claimKey.Name, Namespace: claimKey.Namespace, UID: "claim-uid",
			Annotations: annotations},
		Spec:   corev1.PersistentVolumeClaimSpec{VolumeName: "pvc-1"},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	}
}

func statefulSet(replicas int32, annotations map[string]string) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "sts-uid", Annotations: annotations},
		Spec:       appsv1.StatefulSetSpec{Replicas: &replicas},
	}
}

func appPod(owner *metav1.OwnerReference) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "node-a", Volumes: []corev1.Volume{{Name: "data",
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
				ClaimName: claimKey.Name}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	return p
}

func stsOwner() *metav1.OwnerReference {
	yes := true
	return &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "sts-uid", Controller: &yes}
}

// cluster is a fake API server whose StatefulSet controller deletes the pods of a set scaled to zero.
func cluster(objects ...runtime.Object) *fake.Clientset {
	objects = append(objects, pluginPod("node-a", "10.0.0.1"), pluginPod("node-b", "10.0.0.2"),
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}})
	c := fake.NewClientset(objects...)
	c.PrependReactor("update", "statefulsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s := a.(k8stesting.UpdateAction).GetObject().(*appsv1.StatefulSet)
		if s.Spec.Replicas != nil && *s.Spec.Replicas == 0 {
			_ = c.Tracker().Delete(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, s.Namespace, "web-0")
		}
		return false, nil, nil
	})
	return c
}

func mover(c *fake.Clientset, exec PodExec, mode RepointMode) (*Mover, *bytes.Buffer) {
	out := &bytes.Buffer{}
	return &Mover{Kube: c, Exec: exec, Out: out, DriverNamespace: defaultDriverNamespace,
		PodSelector: defaultPodSelector, Repoint: mode, Timeout: 5 * time.Second, Poll: time.Millisecond}, out
}

func getPV(t *testing.T, c *fake.Clientset) *corev1.PersistentVolume {
	t.Helper()
	got, err := c.CoreV1().PersistentVolumes().Get(context.Background(), "pvc-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func getClaim(t *testing.T, c *fake.Clientset) *corev1.PersistentVolumeClaim {
	t.Helper()
	got, err := c.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), claimKey.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func replicas(t *testing.T, c *fake.Clientset) (int32, map[string]string) {
	t.Helper()
	s, err := c.AppsV1().StatefulSets("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return *s.Spec.Replicas, s.Annotations
}

func TestMoveRecreatesThePersistentVolumeOnTheNewNodeAndStartsTheWorkloadAgain(t *testing.T) {
	c := cluster(pv("node-a", corev1.PersistentVolumeReclaimDelete), claim(nil), statefulSet(3, nil), appPod(stsOwner()))
	var policyAtDelete corev1.PersistentVolumeReclaimPolicy
	c.PrependReactor("delete", "persistentvolumes", func(k8stesting.Action) (bool, runtime.Object, error) {
		// the tracker, not the clientset, which holds its lock while reactors run
		current, err := c.Tracker().Get(schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}, "", "pvc-1")
		if err == nil {
			policyAtDelete = current.(*corev1.PersistentVolume).Spec.PersistentVolumeReclaimPolicy
		}
		return false, nil, nil
	})
	exec := &fakeExec{}
	m, _ := mover(c, exec, RepointRecreate)

	if err := m.MoveClaims(context.Background(), []types.NamespacedName{claimKey}, "node-b"); err != nil {
		t.Fatal(err)
	}
	if policyAtDelete != corev1.PersistentVolumeReclaimRetain {
		t.Errorf("the PersistentVolume was deleted with reclaim policy %q: its volume would go with it", policyAtDelete)
	}

	if got := exec.steps(); !slices.Equal(got, []string{"node-b:copy", "node-b:final"}) {
		t.Errorf("steps run: %v", got)
	}
	copy := strings.Join(exec.calls[0], " ")
	want := "node-b blockpool blockpool-csi move --pool-dir /var/lib/blockpool --node-id node-b " +
		"--peer-ca-dir /etc/blockpool/peer-ca --from node-a=10.0.0.1:9810 --volume " + handle
	if copy != want {
		t.Errorf("copy ran\n%s\nwant\n%s", copy, want)
	}
	got := getPV(t, c)
	if volumeNode(got) != "node-b" || got.Spec.CSI.VolumeHandle != handle {
		t.Errorf("the PersistentVolume names node %q and volume %q", volumeNode(got), got.Spec.CSI.VolumeHandle)
	}
	if got.Spec.ClaimRef == nil || got.Spec.ClaimRef.UID != "claim-uid" {
		t.Errorf("the re-created PersistentVolume is not bound to the claim by UID: %+v", got.Spec.ClaimRef)
	}
	if got.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		t.Errorf("reclaim policy %s, the claim's volume was Delete", got.Spec.PersistentVolumeReclaimPolicy)
	}
	if got.Annotations["pv.kubernetes.io/provisioned-by"] != driverName {
		t.Errorf("annotations lost: %v", got.Annotations)
	}
	if n, annotations := replicas(t, c); n != 3 || annotations[annotationReplicas] != "" {
		t.Errorf("the StatefulSet has %d replicas and annotations %v after the move", n, annotations)
	}
	if a := getClaim(t, c).Annotations; a[annotationMovingTo] != "" || a[annotationStopped] != "" ||
		a[annotationReplacement] != "" || a[annotationSelectedNode] != "node-b" {
		t.Errorf("the claim's annotations after the move: %v", a)
	}
}

func TestMoveInterruptedBetweenDeleteAndCreateIsFinishedByTheSameCommand(t *testing.T) {
	// the state a run killed after deleting the old PersistentVolume leaves
	replacement, _ := json.Marshal(replacementOf(pv("node-a", corev1.PersistentVolumeReclaimDelete),
		claim(nil), "node-b"))
	c := cluster(claim(map[string]string{annotationMovingTo: "node-b", annotationStopped: "statefulset/web",
		annotationReplacement: string(replacement)}),
		statefulSet(0, map[string]string{annotationReplicas: "2"}))
	exec := &fakeExec{}
	m, _ := mover(c, exec, RepointAuto)

	if err := m.MoveClaims(context.Background(), []types.NamespacedName{claimKey}, "node-b"); err != nil {
		t.Fatal(err)
	}

	if len(exec.calls) != 0 {
		t.Errorf("copied again a volume node b took already: %v", exec.steps())
	}
	if got := getPV(t, c); volumeNode(got) != "node-b" || got.Spec.CSI.VolumeHandle != handle {
		t.Errorf("the PersistentVolume was not created on node b: %+v", got.Spec)
	}
	if n, _ := replicas(t, c); n != 2 {
		t.Errorf("the StatefulSet has %d replicas, had 2 before the move", n)
	}
}

func TestMoveWaitsForTheSourceToLetGoOfTheVolume(t *testing.T) {
	c := cluster(pv("node-a", corev1.PersistentVolumeReclaimRetain), claim(nil), statefulSet(1, nil), appPod(stsOwner()))
	exec := &fakeExec{finals: []int{exitInUseOnSource, exitInUseOnSource, 0}}
	m, _ := mover(c, exec, RepointRecreate)

	if err := m.MoveClaims(context.Background(), []types.NamespacedName{claimKey}, "node-b"); err != nil {
		t.Fatal(err)
	}
	if got := exec.steps(); !slices.Equal(got, []string{"node-b:copy", "node-b:final", "node-b:final", "node-b:final"}) {
		t.Errorf("steps run: %v", got)
	}
}

func TestTheLastCopyTakesWhatItTakesOnlyTheWaitForTheSourceIsBounded(t *testing.T) {
	c := cluster(pv("node-a", corev1.PersistentVolumeReclaimRetain), claim(nil), statefulSet(1, nil), appPod(stsOwner()))
	exec := &fakeExec{finalTook: 300 * time.Millisecond}
	m, _ := mover(c, exec, RepointRecreate)
	m.Timeout = 50 * time.Millisecond

	if err := m.MoveClaims(context.Background(), []types.NamespacedName{claimKey}, "node-b"); err != nil {
		t.Fatalf("a last copy longer than --timeout was cut: %v", err)
	}
}

func TestAClaimOnTheDestinationAlreadyKeepsItsPodsRunning(t *testing.T) {
	c := cluster(pv("node-b", corev1.PersistentVolumeReclaimDelete), claim(nil), statefulSet(2, nil), appPod(stsOwner()))
	scaled := 0
	c.PrependReactor("update", "statefulsets", func(k8stesting.Action) (bool, runtime.Object, error) {
		scaled++
		return false, nil, nil
	})
	exec := &fakeExec{}
	m, out := mover(c, exec, RepointAuto)

	if err := m.MoveClaims(context.Background(), []types.NamespacedName{claimKey}, "node-b"); err != nil {
		t.Fatal(err)
	}
	if scaled != 0 {
		t.Errorf("the StatefulSet was scaled %d times for a volume on node b already", scaled)
	}
	if len(exec.calls) != 0 || !strings.Contains(out.String(), "is on node node-b already") {
		t.Errorf("ran %v; output: %s", exec.steps(), out)
	}
}

func TestMoveThatCannotStopAPodChangesNothing(t *testing.T) {
	c := cluster(pv("node-a", corev1.PersistentVolumeReclaimDelete), claim(nil), appPod(nil))
	exec := &fakeExec{}
	m, _ := mover(c, exec, RepointAuto)

	err := m.MoveClaims(context.Background(), []types.NamespacedName{claimKey}, "node-b")
	if err == nil || !strings.Contains(err.Error(), "pod web-0 uses the claim and belongs to no StatefulSet or Deployment") {
		t.Fatalf("error: %v", err)
	}
	if got := exec.steps(); !slices.Equal(got, []string{"node-b:copy"}) {
		t.Errorf("steps run: %v", got)
	}
	if volumeNode(getPV(t, c)) != "node-a" {
		t.Error("re-pointed a volume whose pod still runs on node a")
	}
}

func TestMoveToAnotherNodeThanTheOneUnderWayIsRefusedOnceItsLastCopyBegan(t *testing.T) {
	c := cluster(pv("node-a", corev1.PersistentVolumeReclaimDelete),
		claim(map[string]string{annotationMovingTo: "node-c", annotationFinalStarted: "true"}))
	exec := &fakeExec{}
	m, _ := mover(c, exec, RepointAuto)

	err := m.MoveClaims(context.Background(), []types.NamespacedName{claimKey}, "node-b")
	if err == nil || !strings.Contains(err.Error(), "is being moved to node node-c, whose last copy has begun") {
		t.Fatalf("error: %v", err)
	}
	if len(exec.calls) != 0 {
		t.Errorf("ran %v", exec.steps())
	}
}

func TestMoveMayChangeItsDestinationBeforeItsLastCopy(t *testing.T) {
	c := cluster(pv("node-a", corev1.PersistentVolumeReclaimDelete),
		claim(map[string]string{annotationMovingTo: "node-c"}), statefulSet(1, nil), appPod(stsOwner()))
	m, out := mover(c, &fakeExec{}, RepointAuto)

	if err := m.MoveClaims(context.Background(), []types.NamespacedName{claimKey}, "node-b"); err != nil {
		t.Fatal(err)
	}
	if volumeNode(getPV(t, c)) != "node-b" {
		t.Error("the volume did not move to node b")
	}
	if !strings.Contains(out.String(), "moving to node node-b instead of node-c") {
		t.Errorf("output: %s", out)
	}
}

func TestAutoRepointChangesTheAffinityInPlaceWhereTheAPIServerAllowsIt(t *testing.T) {
	c := cluster(pv("node-a", corev1.PersistentVolumeReclaimDelete), claim(nil), statefulSet(1, nil), appPod(stsOwner()))
	var deleted bool
	c.PrependReactor("delete", "persistentvolumes", func(k8stesting.Action) (bool, runtime.Object, error) {
		deleted = true
		return false, nil, nil
	})
	m, _ := mover(c, &fakeExec{}, RepointAuto)

	if err := m.MoveClaims(context.Background(), []types.NamespacedName{claimKey}, "node-b"); err != nil {
		t.Fatal(err)
	}
	if deleted {
		t.Error("deleted the PersistentVolume although its affinity could change in place")
	}
	if volumeNode(getPV(t, c)) != "node-b" {
		t.Error("the PersistentVolume still names node a")
	}
}

func TestAutoRepointRecreatesWhereTheAPIServerKeepsTheAffinity(t *testing.T) {
	c := cluster(pv("node-a", corev1.PersistentVolumeReclaimDelete), claim(nil), statefulSet(1, nil), appPod(stsOwner()))
	c.PrependReactor("update", "persistentvolumes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "PersistentVolume"}, "pvc-1", field.ErrorList{
			field.Invalid(field.NewPath("spec", "nodeAffinity"), nil, "field is immutable")})
	})
	m, out := mover(c, &fakeExec{}, RepointAuto)

	if err := m.MoveClaims(context.Background(), []types.NamespacedName{claimKey}, "node-b"); err != nil {
		t.Fatal(err)
	}
	if volumeNode(getPV(t, c)) != "node-b" {
		t.Error("the PersistentVolume still names node a")
	}
	if !strings.Contains(out.String(), "re-creating it on node node-b") {
		t.Errorf("output: %s", out)
	}
}

func TestAllFromListsTheBoundClaimsOfTheNodesVolumes(t *testing.T) {
	other := pv("node-b", corev1.PersistentVolumeReclaimDelete)
	other.Name, other.Spec.ClaimRef.Name = "pvc-2", "elsewhere"
	released := pv("node-a", corev1.PersistentVolumeReclaimRetain)
	released.Name, released.Status.Phase = "pvc-3", corev1.VolumeReleased
	// a claim whose PersistentVolume a cut run deleted before re-creating it on node b
	cut := claim(map[string]string{annotationMovingFrom: "node-a", annotationMovingTo: "node-b"})
	cut.Name, cut.Spec.VolumeName = "cut", "pvc-gone"
	c := cluster(pv("node-a", corev1.PersistentVolumeReclaimDelete), other, released, cut)
	m, _ := mover(c, &fakeExec{}, RepointAuto)

	claims, err := m.ClaimsOn(context.Background(), "node-a")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(claims, []types.NamespacedName{{Namespace: "default", Name: "cut"}, claimKey}) {
		t.Errorf("claims on node a: %v", claims)
	}
}
