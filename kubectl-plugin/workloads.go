package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
)

// A workload the move stops and starts again: "statefulset/web" or "deployment/app", in a
// claim's namespace. Kubernetes has no way to keep one pod of a StatefulSet or Deployment
// stopped, so the workload stops as a whole, each replica with it, and gets its replicas back.
type workload struct {
	namespace, kind, name string
}

func (w workload) String() string { return w.kind + "/" + w.name }

func parseWorkloads(namespace, list string) []workload {
	var out []workload
	for _, item := range strings.Split(list, ",") {
		if kind, name, ok := strings.Cut(strings.TrimSpace(item), "/"); ok {
			out = append(out, workload{namespace, kind, name})
		}
	}
	return out
}

func joinWorkloads(ws []workload) string {
	names := make([]string, 0, len(ws))
	for _, w := range ws {
		names = append(names, w.String())
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// stopWorkloads scales to zero every workload whose pods use one of the claims, recording on
// each claim which (before scaling: a run cut here finds them again) and on each workload its
// replicas, then waits until no pod uses any of the claims.
func (m *Mover) stopWorkloads(ctx context.Context, moves []claimMove) error {
	for _, mv := range moves {
		users, err := m.claimUsers(ctx, mv.claim)
		if err != nil {
			return err
		}
		claim, err := m.Kube.CoreV1().PersistentVolumeClaims(mv.claim.Namespace).Get(ctx, mv.claim.Name,
			metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("%s: %w", mv, err)
		}
		stopped := parseWorkloads(mv.claim.Namespace, claim.Annotations[annotationStopped])
		for _, pod := range users {
			w, err := m.owner(ctx, &pod)
			if err != nil {
				return fmt.Errorf("%s: %w", mv, err)
			}
			if !containsWorkload(stopped, w) {
				stopped = append(stopped, w)
			}
		}
		if len(stopped) > 0 {
			list := joinWorkloads(stopped)
			if err := m.annotateClaim(ctx, mv.claim, map[string]*string{annotationStopped: &list}); err != nil {
				return err
			}
		}
		for _, w := range stopped {
			if err := m.scaleDown(ctx, w); err != nil {
				return err
			}
		}
	}
	for _, mv := range moves {
		err := m.waitFor(ctx, fmt.Sprintf("the pods using %s to stop", mv), func(ctx context.Context) (bool, error) {
			users, err := m.claimUsers(ctx, mv.claim)
			return len(users) == 0, err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// startWorkloads gives each workload the claims' annotations name its replicas back.
func (m *Mover) startWorkloads(ctx context.Context, moves []claimMove) error {
	for _, mv := range moves {
		claim, err := m.Kube.CoreV1().PersistentVolumeClaims(mv.claim.Namespace).Get(ctx, mv.claim.Name,
			metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("%s: %w", mv, err)
		}
		for _, w := range parseWorkloads(mv.claim.Namespace, claim.Annotations[annotationStopped]) {
			if err := m.scaleBack(ctx, w); err != nil {
				return err
			}
		}
	}
	return nil
}

// claimUsers are the pods of the claim's namespace that name it and have not ended.
func (m *Mover) claimUsers(ctx context.Context, claim types.NamespacedName) ([]corev1.Pod, error) {
	pods, err := m.Kube.CoreV1().Pods(claim.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list the pods of namespace %s: %w", claim.Namespace, err)
	}
	var users []corev1.Pod
	for _, pod := range pods.Items {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, v := range pod.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim.Name {
				users = append(users, pod)
				break
			}
		}
	}
	return users, nil
}

// owner is the StatefulSet or Deployment that makes a pod; any other pod is the operator's to stop.
func (m *Mover) owner(ctx context.Context, pod *corev1.Pod) (workload, error) {
	ref := metav1.GetControllerOf(pod)
	if ref != nil && ref.Kind == "StatefulSet" {
		return workload{pod.Namespace, "statefulset", ref.Name}, nil
	}
	if ref != nil && ref.Kind == "ReplicaSet" {
		rs, err := m.Kube.AppsV1().ReplicaSets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return workload{}, fmt.Errorf("pod %s's ReplicaSet %s: %w", pod.Name, ref.Name, err)
		}
		if d := metav1.GetControllerOf(rs); d != nil && d.Kind == "Deployment" {
			return workload{pod.Namespace, "deployment", d.Name}, nil
		}
	}
	return workload{}, fmt.Errorf("pod %s uses the claim and belongs to no StatefulSet or Deployment the move "+
		"can stop and start: stop it yourself (delete the pod, or scale what makes it), then run this again",
		pod.Name)
}

func (m *Mover) scaleDown(ctx context.Context, w workload) error {
	return m.updateReplicas(ctx, w, func(annotations map[string]string, replicas *int32) *int32 {
		if _, recorded := annotations[annotationReplicas]; !recorded {
			current := int32(1)
			if replicas != nil {
				current = *replicas
			}
			annotations[annotationReplicas] = strconv.Itoa(int(current))
			fmt.Fprintf(m.Out, "stopping %s/%s (%d replicas) for the move\n", w.namespace, w, current)
		}
		zero := int32(0)
		return &zero
	})
}

func (m *Mover) scaleBack(ctx context.Context, w workload) error {
	return m.updateReplicas(ctx, w, func(annotations map[string]string, replicas *int32) *int32 {
		recorded, ok := annotations[annotationReplicas]
		if !ok {
			return replicas // started again already
		}
		delete(annotations, annotationReplicas)
		n, err := strconv.ParseInt(recorded, 10, 32)
		if err != nil || n < 0 {
			n = 1
		}
		back := int32(n)
		fmt.Fprintf(m.Out, "starting %s/%s again (%d replicas)\n", w.namespace, w, back)
		return &back
	})
}

// updateReplicas changes a workload's replicas and annotations in one update, retried on conflicts.
func (m *Mover) updateReplicas(ctx context.Context, w workload,
	change func(annotations map[string]string, replicas *int32) *int32) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		switch w.kind {
		case "statefulset":
			s, err := m.Kube.AppsV1().StatefulSets(w.namespace).Get(ctx, w.name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			s.Spec.Replicas = change(annotationsOf(&s.ObjectMeta), s.Spec.Replicas)
			_, err = m.Kube.AppsV1().StatefulSets(w.namespace).Update(ctx, s, metav1.UpdateOptions{})
			return err
		case "deployment":
			d, err := m.Kube.AppsV1().Deployments(w.namespace).Get(ctx, w.name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			d.Spec.Replicas = change(annotationsOf(&d.ObjectMeta), d.Spec.Replicas)
			_, err = m.Kube.AppsV1().Deployments(w.namespace).Update(ctx, d, metav1.UpdateOptions{})
			return err
		}
		return fmt.Errorf("a workload of kind %s is not one the move stops", w.kind)
	})
	if err != nil {
		return fmt.Errorf("scale %s/%s: %w", w.namespace, w, err)
	}
	return nil
}

func annotationsOf(meta *metav1.ObjectMeta) map[string]string {
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	return meta.Annotations
}

func containsWorkload(ws []workload, w workload) bool {
	for _, x := range ws {
		if x == w {
			return true
		}
	}
	return false
}
