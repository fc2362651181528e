#!/usr/bin/env python3
"""mkco.py CASE OUT : hostile AMDGPU code objects for the CLI tests (tests/run), each the smallest
object the validator otherwise accepts, built byte by byte: null, .shstrtab, .strtab, .symtab and
the NT_AMDGPU_METADATA note, plus what CASE adds.

  many-args OUT       17 kernels of 4096 arguments: 69632 argument records, over AOT_MAX_COUNT
  many-kernels DIR    17 objects of 4096 kernels in DIR: 69632 kernel records
  distinct-args OUT   16 kernels of 4096 arguments, each argument named differently
  section-past-end OUT   a section whose bytes lie past the end of the file
  segment-past-end OUT   a program header whose file bytes lie past the end of the file
  long-name N OUT     one kernel whose name is N bytes
  long-arg N OUT      one kernel with one argument whose name is N bytes
  bad-mach OUT        e_flags name no known processor (EF_AMDGPU_MACH 0)
  ok OUT              a valid one (kernel k)
"""
import os
import struct
import sys


def mp_str(s):
    b = s.encode()
    if len(b) < 32: return bytes([0xa0 | len(b)]) + b
    if len(b) < 256: return b'\xd9' + bytes([len(b)]) + b
    return b'\xda' + struct.pack('>H', len(b)) + b


def mp_map(pairs):
    n = len(pairs)
    return (bytes([0x80 | n]) if n < 16 else b'\xde' + struct.pack('>H', n)) + b''.join(k + v for k, v in pairs)


def mp_array(items):
    n = len(items)
    return (bytes([0x90 | n]) if n < 16 else b'\xdc' + struct.pack('>H', n)) + b''.join(items)


def kernel(name, symbol='k.kd', nargs=0, args=None):
    return mp_map([(mp_str('.name'), mp_str(name)), (mp_str('.symbol'), mp_str(symbol)),
                   (mp_str('.args'), mp_array(args if args is not None else [b'\x80'] * nargs))])


def named_arg(name):
    return mp_map([(mp_str('.size'), b'\x08'), (mp_str('.value_kind'), mp_str('by_value')), (mp_str('.name'), mp_str(name))])


def metadata(kernels):
    return mp_map([(mp_str('amdhsa.target'), mp_str('amdgcn-amd-amdhsa--gfx942')),
                   (mp_str('amdhsa.kernels'), mp_array(kernels))])


def sh(name, typ, off, size, link=0, info=0, ent=0, align=1):
    return struct.pack('<IIQQQQIIQQ', name, typ, 0, 0, off, size, link, info, align, ent)


def elf(meta, symbol='k.kd', e_flags=0x54c, extra_section=None, segment=None):
    """extra_section: (offset, size) of a PROGBITS section; segment: (offset, filesz) of a PT_LOAD."""
    shstr = b'\0.shstrtab\0.strtab\0.symtab\0.note\0.extra\0'
    strtab = b'\0' + symbol.encode() + b'\0'
    syms = b'\0' * 24 + struct.pack('<IBBHQQ', 1, 0x11, 0, 4, 0, 64)
    desc = struct.pack('<III', 7, len(meta), 32) + b'AMDGPU\0\0' + meta
    note = desc + b'\0' * (-len(desc) % 4)
    o_str = 64 + len(shstr)
    o_sym = (o_str + len(strtab) + 7) & ~7
    o_note = o_sym + len(syms)
    o_ph = (o_note + len(note) + 7) & ~7
    nph = 1 if segment else 0
    o_sh = o_ph + 56 * nph
    nsh = 6 if extra_section else 5
    out = bytearray(b'\x7fELF\x02\x01\x01' + bytes([64, 3]) + b'\0' * 7)
    out += struct.pack('<HHIQQQIHHHHHH', 3, 224, 1, 0, o_ph if nph else 0, o_sh, e_flags, 64, 56, nph, 64, nsh, 1)
    out += shstr + b'\0' * (o_str - 64 - len(shstr)) + strtab
    out += b'\0' * (o_sym - len(out)) + syms + note + b'\0' * (o_ph - o_note - len(note))
    if segment:
        out += struct.pack('<IIQQQQQQ', 1, 4, segment[0], 0, 0, segment[1], segment[1], 8)
    out += b'\0' * 64 + sh(1, 3, 64, len(shstr)) + sh(11, 3, o_str, len(strtab))
    out += sh(19, 2, o_sym, len(syms), link=2, info=1, ent=24, align=8) + sh(27, 7, o_note, len(note), align=4)
    if extra_section:
        out += sh(33, 1, extra_section[0], extra_section[1])
    return bytes(out)


def main(argv):
    case, out = argv[1], argv[-1]
    ok = metadata([kernel('k')])
    if case == 'many-args':
        data = {out: elf(metadata([kernel('k%d' % i, nargs=4096) for i in range(17)]))}
    elif case == 'many-kernels':
        os.makedirs(out, exist_ok=True)
        meta = metadata([kernel('k%d' % i) for i in range(4096)])
        data = {os.path.join(out, 'm%d.co' % m): elf(meta) for m in range(17)}
    elif case == 'distinct-args':
        ks = [kernel('k%d' % i, args=[named_arg('a%d_%d' % (i, j)) for j in range(4096)]) for i in range(16)]
        data = {out: elf(metadata(ks))}
    elif case == 'section-past-end':
        data = {out: elf(ok, extra_section=(1 << 20, 16))}
    elif case == 'segment-past-end':
        data = {out: elf(ok, segment=(0, 1 << 40))}
    elif case == 'long-name':
        name = 'k' * int(argv[2])
        data = {out: elf(metadata([kernel(name, name + '.kd')]), symbol=name + '.kd')}
    elif case == 'long-arg':
        data = {out: elf(metadata([kernel('k', args=[named_arg('a' * int(argv[2]))])]))}
    elif case == 'bad-mach':
        data = {out: elf(ok, e_flags=0x500)}
    elif case == 'ok':
        data = {out: elf(ok)}
    else:
        sys.exit(__doc__)
    for path, b in data.items():
        with open(path, 'wb') as f:
            f.write(b)


if __name__ == '__main__':
    main(sys.argv)
