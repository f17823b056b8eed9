package main

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// RepointMode is how a PersistentVolume comes to name its volume's new node.
type RepointMode string

const (
	// RepointAuto changes the node affinity in place, and re-creates the PersistentVolume where
	// the API server refuses that (MutablePVNodeAffinity off: the default up to Kubernetes 1.36).
	RepointAuto RepointMode = "auto"
	// RepointPatch only changes the node affinity in place.
	RepointPatch RepointMode = "patch"
	// RepointRecreate deletes the PersistentVolume and creates it again with the same name,
	// volume handle and claim, pinned to the new node; the claim, Lost meanwhile, binds to it again.
	RepointRecreate RepointMode = "recreate"
)

func (m *Mover) repoint(ctx context.Context, mv claimMove, to string) error {
	claim, err := m.Kube.CoreV1().PersistentVolumeClaims(mv.claim.Namespace).Get(ctx, mv.claim.Name,
		metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("%s: %w", mv, err)
	}
	// a re-creation under way is finished as one
	if m.Repoint != RepointRecreate && claim.Annotations[annotationReplacement] == "" {
		err := m.patchAffinity(ctx, mv, to)
		if err == nil || m.Repoint == RepointPatch || !apierrors.IsInvalid(err) {
			return err
		}
		fmt.Fprintf(m.Out, "%s: the API server keeps PersistentVolume %s's node affinity as it is "+
			"(MutablePVNodeAffinity is off): re-creating it on node %s\n", mv, mv.pvName, to)
	}
	return m.recreate(ctx, mv, to)
}

func (m *Mover) patchAffinity(ctx context.Context, mv claimMove, to string) error {
	pvs := m.Kube.CoreV1().PersistentVolumes()
	pv, err := pvs.Get(ctx, mv.pvName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("%s: PersistentVolume %s: %w", mv, mv.pvName, err)
	}
	if volumeNode(pv) == to {
		return nil
	}
	pv.Spec.NodeAffinity = pinnedTo(pv.Spec.NodeAffinity, to)
	if _, err := pvs.Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
		return err
	}
	fmt.Fprintf(m.Out, "%s: PersistentVolume %s now names node %s\n", mv, mv.pvName, to)
	return nil
}

// recreate replaces the PersistentVolume by one pinned to the new node. The replacement is saved
// on the claim first; the old one's reclaim policy becomes Retain before it is deleted, so that
// deleting the object never deletes the volume; its finalizers go with it (pv-protection keeps a
// bound PersistentVolume otherwise).
func (m *Mover) recreate(ctx context.Context, mv claimMove, to string) error {
	pvs := m.Kube.CoreV1().PersistentVolumes()
	claim, err := m.Kube.CoreV1().PersistentVolumeClaims(mv.claim.Namespace).Get(ctx, mv.claim.Name,
		metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("%s: %w", mv, err)
	}
	replacement, err := savedReplacement(claim)
	if err != nil {
		return err
	}
	if replacement == nil {
		old, err := pvs.Get(ctx, mv.pvName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("%s: PersistentVolume %s: %w", mv, mv.pvName, err)
		}
		if volumeNode(old) == to {
			return nil
		}
		replacement = replacementOf(old, claim, to)
		saved, err := json.Marshal(replacement)
		if err != nil {
			return err
		}
		text := string(saved)
		if err := m.annotateClaim(ctx, mv.claim, map[string]*string{annotationReplacement: &text}); err != nil {
			return err
		}
	}
	if old, err := pvs.Get(ctx, mv.pvName, metav1.GetOptions{}); err == nil && volumeNode(old) != to {
		if old.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain {
			patch := []byte(`{"spec":{"persistentVolumeReclaimPolicy":"Retain"}}`)
			if _, err := pvs.Patch(ctx, old.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				return fmt.Errorf("%s: set PersistentVolume %s to Retain before re-creating it: %w", mv, old.Name, err)
			}
		}
		if err := pvs.Delete(ctx, old.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("%s: delete PersistentVolume %s: %w", mv, old.Name, err)
		}
		noFinalizers := []byte(`{"metadata":{"finalizers":null}}`)
		if _, err := pvs.Patch(ctx, old.Name, types.MergePatchType, noFinalizers,
			metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("%s: release PersistentVolume %s's finalizers: %w", mv, old.Name, err)
		}
		if err := m.waitFor(ctx, "PersistentVolume "+old.Name+" to be deleted", func(ctx context.Context) (bool, error) {
			_, err := pvs.Get(ctx, old.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		}); err != nil {
			return err
		}
	} else if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("%s: PersistentVolume %s: %w", mv, mv.pvName, err)
	}
	if _, err := pvs.Create(ctx, replacement, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("%s: create PersistentVolume %s on node %s: %w", mv, replacement.Name, to, err)
	}
	err = m.waitFor(ctx, mv.String()+" to bind to PersistentVolume "+replacement.Name+" again",
		func(ctx context.Context) (bool, error) {
			c, err := m.Kube.CoreV1().PersistentVolumeClaims(mv.claim.Namespace).Get(ctx, mv.claim.Name,
				metav1.GetOptions{})
			return err == nil && c.Status.Phase == corev1.ClaimBound && c.Spec.VolumeName == replacement.Name, err
		})
	if err != nil {
		return err
	}
	fmt.Fprintf(m.Out, "%s: PersistentVolume %s re-created on node %s, the claim bound to it again\n",
		mv, replacement.Name, to)
	return nil
}

// replacementOf is the PersistentVolume old becomes on node `to`: its name, labels, annotations
// and spec, with the claim it is bound to (by UID, so no other claim can take it).
func replacementOf(old *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim, to string) *corev1.PersistentVolume {
	spec := *old.Spec.DeepCopy()
	spec.NodeAffinity = pinnedTo(spec.NodeAffinity, to)
	spec.ClaimRef = &corev1.ObjectReference{
		Kind: "PersistentVolumeClaim", APIVersion: "v1",
		Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID,
	}
	return &corev1.PersistentVolume{
		TypeMeta: metav1.TypeMeta{Kind: "PersistentVolume", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name: old.Name, Labels: old.Labels, Annotations: old.Annotations,
		},
		Spec: spec,
	}
}

// pinnedTo is a node affinity that names node `to` by the topology key where this one named the
// old node; every other term and expression is kept.
func pinnedTo(affinity *corev1.VolumeNodeAffinity, to string) *corev1.VolumeNodeAffinity {
	out := affinity.DeepCopy()
	for i := range out.Required.NodeSelectorTerms {
		for j := range out.Required.NodeSelectorTerms[i].MatchExpressions {
			if expr := &out.Required.NodeSelectorTerms[i].MatchExpressions[j]; expr.Key == topologyKey {
				expr.Values = []string{to}
			}
		}
	}
	return out
}

func savedReplacement(claim *corev1.PersistentVolumeClaim) (*corev1.PersistentVolume, error) {
	saved := claim.Annotations[annotationReplacement]
	if saved == "" {
		return nil, nil
	}
	var pv corev1.PersistentVolume
	if err := json.Unmarshal([]byte(saved), &pv); err != nil || pv.Spec.CSI == nil {
		return nil, fmt.Errorf("claim %s/%s: annotation %s does not hold a PersistentVolume: restore it from "+
			"the claim's history, or remove it if the PersistentVolume exists", claim.Namespace, claim.Name,
			annotationReplacement)
	}
	return &pv, nil
}
