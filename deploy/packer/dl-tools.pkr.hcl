# A baked VM image that boots into training with no download: AWS's Deep Learning Base GPU image
# (NVIDIA driver, Docker, NVIDIA Container Toolkit), plus the published training image pulled
# onto its disk and the boot kit of deploy/vm/ installed and enabled (the same units the user data
# installs). A VM from it trains with the baked settings (no data disk) or with any user data
# that writes /etc/dl-tools/train.env (deploy/cloud-init.yaml).
#
#   packer init deploy/packer        (Packer 1.7 or newer: plugins.pkr.hcl names the plugin)
#   packer build -var image=ghcr.io/OWNER/dl-tools:0.1.0 deploy/packer
# Checked by tests/deploy/validate.sh packer (`packer validate` of this file).

variable "image" {
  type        = string
  description = "The published training image to pre-pull, e.g. ghcr.io/OWNER/dl-tools:0.1.0."
}

variable "region" {
  type    = string
  default = "us-east-1"
}

# Building needs no GPU; the GPU base image boots on any instance type.
variable "instance_type" {
  type    = string
  default = "m5.large"
}

variable "base_image_name" {
  type        = string
  description = "The AWS Deep Learning Base image to start from (its name filter)."
  default     = "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) *"
}

locals {
  timestamp = regex_replace(timestamp(), "[- TZ:]", "")
}

source "amazon-ebs" "gpu" {
  region        = var.region
  instance_type = var.instance_type
  ssh_username  = "ubuntu"
  ami_name      = "dl-tools-${local.timestamp}"
  source_ami_filter {
    filters = {
      name                = var.base_image_name
      virtualization-type = "hvm"
      root-device-type    = "ebs"
    }
    owners      = ["amazon"]
    most_recent = true
  }
  # The training image is several GB on top of the base image's drivers and toolkits.
  launch_block_device_mappings {
    device_name           = "/dev/sda1"
    volume_size           = 120
    volume_type           = "gp3"
    throughput            = 125
    iops                  = 3000
    delete_on_termination = true
  }
  tags = {
    Name     = "dl-tools"
    dl-image = var.image
  }
}

build {
  sources = ["source.amazon-ebs.gpu"]

  # The kit of deploy/vm/, uploaded as it is in this checkout.
  provisioner "file" {
    source      = "${path.root}/../vm/"
    destination = "/tmp/dl-vm"
  }

  provisioner "shell" {
    inline = [
      "sudo /tmp/dl-vm/install.sh --image '${var.image}' --pull",
      "sudo rm -rf /tmp/dl-vm",
    ]
  }
}
