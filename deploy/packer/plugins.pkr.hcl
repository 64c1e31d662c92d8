# The plugin the template needs, for Packer 1.7 and newer (`packer init deploy/packer`), which no
# longer carry the AWS builder themselves. Kept apart from dl-tools.pkr.hcl so that Debian's
# Packer (1.6, AWS builder built in, no required_plugins) validates the template offline.
packer {
  required_plugins {
    amazon = {
      source  = "github.com/hashicorp/amazon"
      version = "= 1.3.3"
    }
  }
}
