# Run by `cmake --install` (the rule of cmake/python_install.cmake, which sets dl_python,
# dl_python_dir, dl_python_source, dl_loader_module and dl_strip): installs dl_plan and, where
# built, dl_loader into the folder of dl_python's path that belongs to the install prefix, so that
# `python3 -c "import dl_plan, dl_loader"` works with no PYTHONPATH: for the prefix ~/.local
# (python3 -m site --user-base) the user site; else the first site-packages or dist-packages
# folder of sys.path under the prefix (Debian's /usr/local/lib/python3.X/dist-packages for
# /usr/local); else PREFIX/lib/python3.X/site-packages, which is not on the path
# (env/install.sh then says so). A non-empty dl_python_dir is used as given.

# argv[1]: the prefix. Prints the folder.
set(dl_python_dir_rule [=[
import os, site, sys, sysconfig
prefix = os.path.realpath(sys.argv[1])
def under(path):
    return os.path.realpath(path).startswith(prefix.rstrip(os.sep) + os.sep)
if os.path.realpath(site.getuserbase()) == prefix:
    print(site.getusersitepackages())
    sys.exit(0)
found = [p for p in sys.path
         if p and under(p) and os.path.basename(p) in ("site-packages", "dist-packages")]
found.append(sysconfig.get_paths()["purelib"])
found = [p for p in found if under(p)]
print(found[0] if found else sysconfig.get_path(
    "purelib", "posix_prefix", vars={"base": prefix, "platbase": prefix}))
]=])

if(dl_python_dir STREQUAL "")
  execute_process(COMMAND "${dl_python}" -c "${dl_python_dir_rule}" "${CMAKE_INSTALL_PREFIX}"
                  OUTPUT_VARIABLE dir OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR dir STREQUAL "")
    message(FATAL_ERROR "${dl_python} could not name its module folder under "
                        "${CMAKE_INSTALL_PREFIX} (${rc}); set DL_PYTHON_INSTALL_DIR")
  endif()
elseif(IS_ABSOLUTE "${dl_python_dir}")
  set(dir "${dl_python_dir}")
else()
  set(dir "${CMAKE_INSTALL_PREFIX}/${dl_python_dir}")
endif()
# env/install.sh reads this line.
message(STATUS "Python modules for ${dl_python}: ${dir}")

file(INSTALL DESTINATION "${dir}" TYPE DIRECTORY FILES "${dl_python_source}/dl_plan"
     PATTERN "__pycache__" EXCLUDE PATTERN "*.pyc" EXCLUDE)
if(dl_loader_module)
  file(GLOB package_files "${dl_python_source}/dl_loader/*.py")
  file(INSTALL DESTINATION "${dir}/dl_loader" TYPE FILE FILES ${package_files})
  file(INSTALL DESTINATION "${dir}/dl_loader" TYPE MODULE FILES "${dl_loader_module}")
  if(CMAKE_INSTALL_DO_STRIP AND dl_strip)
    get_filename_component(name "${dl_loader_module}" NAME)
    execute_process(COMMAND "${dl_strip}" "$ENV{DESTDIR}${dir}/dl_loader/${name}")
  endif()
endif()
