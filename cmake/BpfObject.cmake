# bpf_object(NAME SOURCE [LIGHT]): compiles src/bpf/NAME.bpf.c with clang -target bpf, turns the
# object into a libbpf skeleton with bpftool, and exposes it as the INTERFACE target `NAME_skel`
# whose include directory holds NAME.skel.h. Modelled on libbpf-bootstrap's FindBpfObject, written
# as a function. LIGHT: a light skeleton, NAME.lskel.h (bpftool gen skeleton -L), loaded by a BPF
# program in the kernel: no libbpf object, so no parse of the kernel's BTF in user space (C only).
find_program(BPF_CLANG clang REQUIRED)
find_program(BPFTOOL bpftool REQUIRED)

function(bpf_object name source)
  cmake_parse_arguments(PARSE_ARGV 2 arg "LIGHT" "" "")
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/bpf)
  set(obj ${out_dir}/${name}.bpf.o)
  set(skel ${out_dir}/${name}.skel.h)
  set(light "")
  if(arg_LIGHT)
    set(skel ${out_dir}/${name}.lskel.h)
    set(light "-L")
  endif()
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
    COMMAND ${BPFTOOL} gen skeleton ${light} ${obj} name ${name} > ${skel}
    DEPENDS ${obj}
    COMMENT "skeleton ${name}"
    VERBATIM)
  add_custom_target(${name}_skel_gen DEPENDS ${skel})
  add_library(${name}_skel INTERFACE)
  add_dependencies(${name}_skel ${name}_skel_gen)
  target_include_directories(${name}_skel INTERFACE ${out_dir})
  target_link_libraries(${name}_skel INTERFACE PkgConfig::LIBBPF)
endfunction()
