package dev.blockpool.common;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.Tag;

/**
 * Marks a test class that drives real loop devices, mkfs and mounts, so needs root. Tagged
 * {@value #TAG}: a plain {@code ./mvnw test} leaves these out and is the fast, unprivileged run;
 * {@code -Proot-tests} (what scripts/test.sh passes) includes them. Each still checks
 * {@link HostRequirements} and skips with the reason on a host that cannot run it. Such a class is
 * named {@code *RealHostTest}, and only such a class: system-tests' RootTestNamesTest checks the
 * test sources of every module for it.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Tag(NeedsRoot.TAG)
public @interface NeedsRoot {

    String TAG = "root";
}
