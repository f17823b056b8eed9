// kubectl-blockpool is the kubectl plugin of the blockpool CSI driver: `kubectl blockpool move`
// moves claims' volumes between the pools of a pool on every node (docs/moving.md).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := root().ExecuteContext(ctx); err != nil {
		os.Exit(1)
	}
}

func root() *cobra.Command {
	config := genericclioptions.NewConfigFlags(true)
	cmd := &cobra.Command{
		Use:          "kubectl-blockpool",
		Short:        "Tools for the blockpool CSI driver",
		SilenceUsage: true,
	}
	config.AddFlags(cmd.PersistentFlags())
	cmd.AddCommand(moveCommand(config))
	return cmd
}

func moveCommand(config *genericclioptions.ConfigFlags) *cobra.Command {
	var to, allFrom, repoint, untilBelow string
	var rounds int
	m := &Mover{DriverNamespace: defaultDriverNamespace, PodSelector: defaultPodSelector, Poll: 2 * time.Second}
	cmd := &cobra.Command{
		Use:   "move (CLAIM | --all-from NODE) --to NODE",
		Short: "Move claims' volumes to another node's pool, stopping their pods only for the last copy",
		Long: `Moves the volume of CLAIM (in the namespace of -n), or with --all-from the volume of every claim
on NODE, to the pool of the node --to names: copies it while its pods run, stops their
StatefulSets and Deployments, copies what changed last, re-points each PersistentVolume at the
new node and starts the workloads again. Run it again after any interruption: it finishes the
move from where it stands. docs/moving.md says what each step does.`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case to == "":
				return fmt.Errorf("--to NODE is required: the node whose pool takes the volumes")
			case allFrom == "" && len(args) != 1:
				return fmt.Errorf("name one claim, or every claim of a node with --all-from NODE")
			case allFrom != "" && len(args) != 0:
				return fmt.Errorf("--all-from moves every claim of its node: name no claim with it")
			case allFrom == to:
				return fmt.Errorf("--all-from and --to name the same node, %s", to)
			}
			switch RepointMode(repoint) {
			case RepointAuto, RepointPatch, RepointRecreate:
			default:
				return fmt.Errorf("--repoint is auto, patch or recreate, not %q", repoint)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			rest, err := config.ToRESTConfig()
			if err != nil {
				return err
			}
			client, err := kubernetes.NewForConfig(rest)
			if err != nil {
				return err
			}
			m.Kube, m.Exec, m.Out, m.Repoint = client, podExecFor(rest, client), cmd.OutOrStdout(), RepointMode(repoint)
			if rounds > 0 {
				m.CopyArgs = append(m.CopyArgs, "--rounds", fmt.Sprint(rounds))
			}
			if untilBelow != "" {
				m.CopyArgs = append(m.CopyArgs, "--until-below", untilBelow)
			}
			var claims []types.NamespacedName
			if allFrom != "" {
				if claims, err = m.ClaimsOn(cmd.Context(), allFrom); err != nil {
					return err
				}
				if len(claims) == 0 {
					fmt.Fprintf(m.Out, "node %s holds no claim's volume\n", allFrom)
					return nil
				}
			} else {
				namespace, _, err := config.ToRawKubeConfigLoader().Namespace()
				if err != nil {
					return err
				}
				claims = []types.NamespacedName{{Namespace: namespace, Name: args[0]}}
			}
			return m.MoveClaims(cmd.Context(), claims, to)
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the node whose pool takes the volumes")
	cmd.Flags().StringVar(&allFrom, "all-from", "", "move every claim whose volume this node holds (a node being drained)")
	cmd.Flags().StringVar(&repoint, "repoint", string(RepointAuto), "how each PersistentVolume comes to name the new "+
		"node: auto (in place where the cluster allows it, else re-created), patch, or recreate")
	cmd.Flags().IntVar(&rounds, "rounds", 0, "at most this many copies while the pods run (blockpool-csi move's default: 10)")
	cmd.Flags().StringVar(&untilBelow, "until-below", "", "copy while the pods run until a copy moves less than this "+
		"(blockpool-csi move's default: 64Mi)")
	cmd.Flags().StringVar(&m.DriverNamespace, "driver-namespace", defaultDriverNamespace, "the namespace of the node plugin's pods")
	cmd.Flags().StringVar(&m.PodSelector, "driver-selector", defaultPodSelector, "the label selector of the node plugin's pods")
	cmd.Flags().DurationVar(&m.Timeout, "timeout", 5*time.Minute, "the bound of each wait: pods stopping, the old node "+
		"letting go of a volume, a claim binding again")
	return cmd
}
