# blockpool-csi container image: the driver on a trimmed Java 25 runtime, with the
# host tools the node plugin runs (util-linux, mount, e2fsprogs, xfsprogs).
#
#   image/build.sh                      podman, creates the Debian base if missing,
#                                       builds, and checks the result
#   docker build -t blockpool-csi:0.1.0 .
#
# Why Debian 13 (trixie) for both stages: it is the Debian release whose main
# archive carries OpenJDK 25 (openjdk-25-jdk-headless) and the go tool
# (golang-go). The JDK and go that build the driver therefore come from the same
# signed archive as every other package in the image, installed with apt by name;
# nothing is downloaded from a vendor site. The project's own build runs inside
# the build stage exactly as on a developer machine (./mvnw -B -q -DskipTests
# package), fetching Maven (pinned and checksummed by the wrapper), the Maven
# dependencies (pinned in the poms) and the CSI spec module (checksum-verified by
# proto/fetch-csi-proto.sh).
#
# Reproducibility: the jar is built with a fixed project.build.outputTimestamp,
# and image/build.sh passes the last commit's time as the image timestamp. Debian
# package versions follow the trixie point releases and security updates; for a
# byte-identical rebuild pin the base image by digest (--build-arg
# DEBIAN_IMAGE=docker.io/library/debian:trixie-slim@sha256:...) and build from
# the same day's archive.
ARG DEBIAN_IMAGE=docker.io/library/debian:trixie-slim

# ---------------------------------------------------------------------- build
FROM ${DEBIAN_IMAGE} AS build
ENV DEBIAN_FRONTEND=noninteractive \
    LANG=C.UTF-8
# unzip: the Maven wrapper verifies the checksum of the .zip distribution.
# binutils: jlink --strip-debug strips native libraries with objcopy.
# ca-certificates-java may configure before the JRE it needs and skip Java's trust
# store; rebuilding the certificate stores then creates it (Maven Central is HTTPS).
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      openjdk-25-jdk-headless golang-go ca-certificates unzip binutils \
 && if [ ! -s /etc/ssl/certs/java/cacerts ]; then update-ca-certificates --fresh >/dev/null; fi \
 && test -s /etc/ssl/certs/java/cacerts \
 && rm -rf /var/lib/apt/lists/*
ENV JAVA_HOME=/usr/lib/jvm/java-25-openjdk-amd64

WORKDIR /src
COPY . .
# The caches keep Maven's and Go's downloads between builds; the result does not
# depend on them. update-ca-certificates: a host behind a TLS-intercepting proxy
# mounts its extra CA certificates at /usr/local/share/ca-certificates for this
# step (image/build.sh does); they are trusted by this build stage only and never
# reach the runtime image. Without such a mount it changes nothing.
RUN --mount=type=cache,target=/root/.m2 \
    --mount=type=cache,target=/root/go/pkg/mod \
    update-ca-certificates >/dev/null \
 && ./mvnw -B -q -DskipTests package \
 && test -f driver/target/blockpool-csi.jar

# A runtime with only the modules the jar uses (jdeps), plus jdk.unsupported
# (Netty reaches sun.misc.Unsafe reflectively, which jdeps cannot always see) and
# a class data sharing archive for a faster start. The second CDS archive is for
# heaps over 32 GiB (no compressed oops), which this driver never uses.
RUN modules="$( { jdeps --multi-release 25 --ignore-missing-deps --print-module-deps \
                    driver/target/blockpool-csi.jar | tr ',' '\n'; echo jdk.unsupported; } \
                | sort -u | paste -sd, -)" \
 && echo "runtime modules: $modules" \
 && jlink --add-modules "$modules" \
      --strip-debug --no-man-pages --no-header-files --compress=zip-6 \
      --generate-cds-archive \
      --output /opt/java \
 && rm -f /opt/java/lib/server/classes_nocoops.jsa \
 && /opt/java/bin/java -Xshare:on -version

# -------------------------------------------------------------------- runtime
FROM ${DEBIAN_IMAGE}
ENV DEBIAN_FRONTEND=noninteractive \
    LANG=C.UTF-8
# util-linux: blkid, blockdev; mount: mount, umount, losetup;
# e2fsprogs: mkfs.ext4, e2fsck, resize2fs; xfsprogs: mkfs.xfs, xfs_growfs.
RUN apt-get update \
 && apt-get install -y --no-install-recommends util-linux mount e2fsprogs xfsprogs \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log

COPY --from=build /opt/java /opt/java
COPY --from=build /src/driver/target/blockpool-csi.jar /opt/blockpool/lib/blockpool-csi.jar
# The launcher, its JVM options and the Java 25 search it runs, which finds /opt/java; and the
# FlexVolume executable, which sidecars-deploy/overlays/flexvolume installs on the nodes.
COPY bin/blockpool-csi bin/java25-home bin/jvm.options bin/blockpool-flexvolume /opt/blockpool/bin/
ENV JAVA_HOME=/opt/java \
    PATH=/opt/blockpool/bin:/opt/java/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# The ahead-of-time caches (JEP 483/514/515) the launcher uses, one per workload: recorded
# here, by the runtime that will use them, from AotTraining's runs (unprivileged, no loop
# device, no mount): the driver's (blockpool-csi.aot), which roughly halves the time from
# start to ready, and the FlexVolume entry's (blockpool-flexvolume.aot), each holding only
# its own process's classes.
RUN for workload in driver:blockpool-csi flexvolume:blockpool-flexvolume; do \
      java @/opt/blockpool/bin/jvm.options -XX:AOTCacheOutput=/opt/blockpool/lib/${workload#*:}.aot \
        -Xlog:aot=error -cp /opt/blockpool/lib/blockpool-csi.jar dev.blockpool.driver.AotTraining ${workload%%:*} \
      && test -s /opt/blockpool/lib/${workload#*:}.aot || exit 1; \
    done

# Runs as root: the node plugin attaches loop devices and mounts file systems (in a
# privileged container), the controller writes the pool's image files.
ENTRYPOINT ["/opt/blockpool/bin/blockpool-csi"]

# Last, so the layers above stay cached across version changes.
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="blockpool-csi" \
      org.opencontainers.image.description="CSI driver serving block volumes carved from a pool of image files" \
      org.opencontainers.image.version="${VERSION}"
