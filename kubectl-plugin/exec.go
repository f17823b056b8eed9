package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
)

// PodExec runs a command in a container of a pod and answers its exit code: how the plugin runs
// blockpool-csi move in the destination node's plugin pod, where the pool and the peer CA are.
type PodExec interface {
	Run(ctx context.Context, pod *corev1.Pod, container string, command []string, out io.Writer) (int, error)
}

// kubeExec is kubectl exec's way: the API server's exec subresource, over WebSocket, else SPDY.
type kubeExec struct {
	config *rest.Config
	client kubernetes.Interface
}

func (k kubeExec) Run(ctx context.Context, pod *corev1.Pod, container string, command []string,
	out io.Writer) (int, error) {
	req := k.client.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).
		SubResource("exec").VersionedParams(&corev1.PodExecOptions{
		Container: container, Command: command, Stdout: true, Stderr: true,
	}, scheme.ParameterCodec)
	websocket, err := remotecommand.NewWebSocketExecutor(k.config, "GET", req.URL().String())
	if err != nil {
		return 0, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(k.config, "POST", req.URL())
	if err != nil {
		return 0, err
	}
	executor, err := remotecommand.NewFallbackExecutor(websocket, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return 0, err
	}
	err = executor.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: out, Stderr: out})
	var exitErr utilexec.CodeExitError
	if errors.As(err, &exitErr) {
		return exitErr.Code, nil
	}
	if err != nil {
		return 0, fmt.Errorf("exec in pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return 0, nil
}

// programExec hands the command to a program instead, as
// "PROGRAM NAMESPACE POD CONTAINER COMMAND...": for clusters whose nodes run no containers,
// such as the end-to-end test's hollow kubelets, where the program runs the command on that
// node's pool itself. KUBECTL_BLOCKPOOL_EXEC names it.
type programExec struct{ program string }

const execProgramEnv = "KUBECTL_BLOCKPOOL_EXEC"

func (p programExec) Run(ctx context.Context, pod *corev1.Pod, container string, command []string,
	out io.Writer) (int, error) {
	cmd := exec.CommandContext(ctx, p.program, append([]string{pod.Namespace, pod.Name, container}, command...)...)
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	if ctx.Err() != nil {
		return 0, ctx.Err() // killed at the deadline: not the command's own answer
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return exitErr.ExitCode(), nil
	}
	return 0, err
}

func podExecFor(config *rest.Config, client kubernetes.Interface) PodExec {
	if program := os.Getenv(execProgramEnv); program != "" {
		return programExec{program}
	}
	return kubeExec{config, client}
}
