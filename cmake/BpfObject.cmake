# bpf_object(NAME SOURCE): compiles src/bpf/NAME.bpf.c with clang -target bpf, turns the object into
# a libbpf skeleton with bpftool, and exposes it as the INTERFACE target `NAME_skel` whose include
# directory holds NAME.skel.h. Modelled on libbpf-bootstrap's FindBpfObject, written as a function.
find_program(BPF_CLANG clang REQUIRED)
find_program(BPFTOOL bpftool REQUIRED)

function(bpf_object name source)
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/bpf)
  set(obj ${out_dir}/${name}.bpf.o)
  set(skel ${out_dir}/${name}.skel.h)
  get_filename_component(src_abs ${source} ABSOLUTE)
  get_filename_component(src_dir ${src_abs} DIRECTORY)
  file(GLOB headers CONFIGURE_DEPENDS ${src_dir}/*.h)
  add_custom_command(
    OUTPUT ${obj}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${out_dir}
    COMMAND ${BPF_CLANG} -g -O2 -target bpf -D__TARGET_ARCH_x86 -Wall -Werror
            -I${src_dir} -I${CMAKE_SOURCE_DIR}/src -idirafter /usr/include/x86_64-linux-gnu
            -c ${src_abs} -o ${obj}
    DEPENDS ${src_abs} ${headers}
    COMMENT "BPF ${name}"
    VERBATIM)
  add_custom_command(
    OUTPUT ${skel}
    COMMAND ${BPFTOOL} gen skeleton ${obj} name ${name} > ${skel}
    DEPENDS ${obj}
    COMMENT "skeleton ${name}"
    VERBATIM)
  add_custom_target(${name}_skel_gen DEPENDS ${skel})
  add_library(${name}_skel INTERFACE)
  add_dependencies(${name}_skel ${name}_skel_gen)
  target_include_directories(${name}_skel INTERFACE ${out_dir})
  target_link_libraries(${name}_skel INTERFACE PkgConfig::LIBBPF)
endfunction()
