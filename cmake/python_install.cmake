# The install rules of the Python side (component "python", which `cmake --install` runs with the
# programs): dl_plan (python/dl_plan, pure Python) and, where the build made it, dl_loader (its
# Python files beside the compiled _core), for the Python dl_loader is built for (DL_PYTHON,
# /usr/bin/python3 by default). Where they go is DL_PYTHON_INSTALL_DIR, relative to the install
# prefix or absolute; empty (the default), it is decided when installing, for the prefix given
# then (cmake/python_install_run.cmake): the user site for ~/.local, else the folder of that
# Python's path under the prefix (Debian's /usr/local/lib/python3.X/dist-packages).
# Included from the top level after trainer/, whose loader_module defines dl_loader_core.
set(DL_PYTHON_INSTALL_DIR "" CACHE STRING
    "Where cmake --install puts dl_plan and dl_loader: relative to the prefix, or absolute; empty: the install prefix's folder on the Python's path")

get_property(dl_module_python GLOBAL PROPERTY DL_LOADER_PYTHON)
if(NOT dl_module_python)
  # No dl_loader: dl_plan alone, for the Python the module would have been built for.
  if(DL_PYTHON AND EXISTS "${DL_PYTHON}")
    set(dl_module_python ${DL_PYTHON})
  else()
    find_program(DL_INSTALL_PYTHON NAMES python3 HINTS /usr/bin NO_DEFAULT_PATH)
    find_program(DL_INSTALL_PYTHON NAMES python3)
    set(dl_module_python ${DL_INSTALL_PYTHON})
  endif()
endif()
if(NOT dl_module_python)
  message(STATUS "python3 not found: cmake --install leaves dl_plan and dl_loader out")
  return()
endif()

set(dl_loader_module "")
if(TARGET dl_loader_core)
  set(dl_loader_module "$<TARGET_FILE:dl_loader_core>")
endif()
install(CODE "
set(dl_python [[${dl_module_python}]])
set(dl_python_dir [[${DL_PYTHON_INSTALL_DIR}]])
set(dl_python_source [[${PROJECT_SOURCE_DIR}/python]])
set(dl_loader_module [[${dl_loader_module}]])
set(dl_strip [[${CMAKE_STRIP}]])
include([[${CMAKE_CURRENT_LIST_DIR}/python_install_run.cmake]])
" COMPONENT python)
