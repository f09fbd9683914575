#!/usr/bin/env python3
"""Writes tests/generate/jinja_cases.inc: templates rendered by Jinja2 in
Hugging Face's environment, the reference the Jinja interpreter's unit tests
compare with. Run: python3 scripts/gen_jinja_cases.py > tests/generate/jinja_cases.inc"""
import json, datetime
import jinja2, jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment
env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
env.filters["tojson"] = lambda x, ensure_ascii=False, indent=None, separators=None, sort_keys=False: json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
ctx = {"xs": [3, 1, 2], "d": {"b": 2, "a": 1}, "s": "  Hello, World  ", "n": None, "msgs": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}, {"role": "user", "content": "ok"}], "u": "Grüße 你好"}
cases = [
 ("text", "plain text\n"),
 ("whitespace control", "a  {%- if true -%}  b  {%- endif -%}  c"),
 ("trim_blocks", "{% if true %}\nyes\n{% endif %}\nafter"),
 ("lstrip_blocks", "x\n    {% if true %}\n    in\n    {% endif %}\ny"),
 ("lstrip keeps with +", "x\n    {%+ if true %}in{% endif %}"),
 ("comments", "a {# note #}\n  {# own line #}\nb"),
 ("raw", "{% raw %}{{ not parsed }}{% endraw %}"),
 ("for loop vars", "{% for x in xs %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}/{{ loop.first }}/{{ loop.last }}/{{ loop.length }};{% endfor %}"),
 ("previtem nextitem", "{% for x in xs %}[{{ loop.previtem }}|{{ loop.nextitem }}]{% endfor %}"),
 ("for else", "{% for x in [] %}no{% else %}empty{% endfor %}"),
 ("for if filter", "{% for m in msgs if m.role == 'user' %}{{ loop.index }}:{{ m.content }} of {{ loop.length }};{% endfor %}"),
 ("for unpack items", "{% for k, v in d.items() %}{{ k }}={{ v }},{% endfor %}"),
 ("break continue", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x > 4 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
 ("loop cycle", "{% for x in xs %}{{ loop.cycle('a', 'b') }}{% endfor %}"),
 ("scoping", "{% set x = 1 %}{% for i in xs %}{% set x = i %}{% endfor %}{{ x }}"),
 ("namespace", "{% set ns = namespace(c=0, last=none) %}{% for i in xs %}{% set ns.c = ns.c + i %}{% set ns.last = i %}{% endfor %}{{ ns.c }} {{ ns.last }}"),
 ("if elif else", "{% for i in range(4) %}{% if i == 0 %}zero{% elif i == 1 %}one{% elif i == 2 %}two{% else %}many{% endif %} {% endfor %}"),
 ("set block", "{% set b %}inner {{ 1 + 1 }}{% endset %}[{{ b }}]"),
 ("macro", "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('a') }} {{ greet('b', punct='?') }} {{ greet(name='c') }}"),
 ("macro recursion", "{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(4) }}"),
 ("call block", "{% macro box() %}[{{ caller() }}]{% endmacro %}{% call box() %}inside{% endcall %}"),
 ("filter block", "{% filter upper %}shout {{ 'this' }}{% endfilter %}"),
 ("arithmetic", "{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 0.1 + 0.2 }} {{ 1e-7 }} {{ 1e22 }} {{ 3.0 }}"),
 ("strings ops", "{{ 'a' ~ 1 ~ none }} {{ 'ab' * 3 }} {{ 'x' + 'y' }} {{ 'b' in 'abc' }} {{ 'z' not in 'abc' }}"),
 ("comparisons", "{{ 1 < 2 < 3 }} {{ 1 == 1.0 }} {{ 'a' < 'b' }} {{ [1, 2] == [1, 2] }} {{ true == 1 }} {{ none == none }} {{ 2 in xs }}"),
 ("logic", "{{ true and 'x' }} {{ false or 'y' }} {{ not none }} {{ none or [] }} {{ 0 and 1 }}"),
 ("ternary", "{{ 'yes' if xs else 'no' }} {{ 'yes' if [] else 'no' }} [{{ 'a' if false }}]"),
 ("literals", "{{ [1, 'a', none, true, 2.5] }} {{ {'k': [1, {'n': none}]} }} {{ (1, 2) | list }} {{ \"it's\" }} {{ 'say \"hi\"' }}"),
 ("subscripts and slices", "{{ xs[0] }} {{ xs[-1] }} {{ xs[1:] }} {{ xs[::-1] }} {{ xs[:-1] }} {{ s[2:7] }} {{ u[0:3] }} {{ u[-2:] }} {{ msgs[0]['role'] }} {{ msgs[0].content }} [{{ xs[10] }}]"),
 ("undefined", "[{{ missing }}] {{ missing is defined }} {{ d.zz is defined }} {{ missing | default('dflt') }} {{ '' | default('e', true) }} {{ missing | length }}"),
 ("tests", "{{ n is none }} {{ s is string }} {{ d is mapping }} {{ xs is iterable }} {{ xs is sequence }} {{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 1 is number }} {{ 1.5 is float }} {{ 1 is integer }} {{ true is boolean }} {{ false is false }} {{ 'ab' is lower }} {{ 'x' is equalto 'x' }} {{ 2 is gt 1 }} {{ 1 is in xs }} {{ n is not none }}"),
 ("string filters", "{{ s | trim }}|{{ s | upper }}|{{ s | lower }}|{{ 'hello world' | title }}|{{ 'hELLO' | capitalize }}|{{ s | replace('l', 'L') }}|{{ s | length }}|{{ u | length }}|{{ 'a\nb\n\nc' | indent(2) }}|{{ 'a\nb' | indent(2, true) }}|{{ 'x y  z' | wordcount }}"),
 ("list filters", "{{ xs | first }} {{ xs | last }} {{ xs | sort }} {{ xs | sort(reverse=true) }} {{ xs | reverse | list }} {{ xs | join('-') }} {{ xs | sum }} {{ xs | min }} {{ xs | max }} {{ [1, 1, 2] | unique | list }} {{ xs | length }} {{ 'abc' | list }}"),
 ("dict filters", "{{ d | items | list }} {{ d | dictsort }} {{ d | dictsort(by='value', reverse=true) }} {{ d | list }} {{ d | length }}"),
 ("select map", "{{ msgs | selectattr('role', 'equalto', 'user') | map(attribute='content') | join(',') }} {{ msgs | rejectattr('role', 'eq', 'user') | list | length }} {{ xs | select('odd') | list }} {{ xs | reject('odd') | list }} {{ xs | map('string') | join }} {{ msgs | map(attribute='x', default='-') | join }}"),
 ("numbers filters", "{{ '42' | int }} {{ 'x' | int }} {{ '3.5' | float }} {{ 3.7 | int }} {{ -3 | abs }} {{ 2.5 | round }} {{ 3.14159 | round(2) }} {{ 2.1 | round(method='ceil') }} {{ 5 | string }} {{ 'ff' | int(base=16) }}"),
 ("tojson", "{{ msgs | tojson }}|{{ d | tojson(indent=2) }}|{{ u | tojson }}|{{ {'a': 'x\"\\\\\n\t'} | tojson }}|{{ d | tojson(sort_keys=true) }}|{{ [1.0, 1e20, none, true] | tojson }}|{{ d | tojson(separators=(',', ':')) }}"),
 ("escape safe", "{{ '<a>&' | e }} {{ ('<b>' | safe) + '<c>' }} {{ '<x>' | safe }}"),
 ("string methods", "{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'a,b,c'.split(',', 1) }}|{{ 'a,b,c'.rsplit(',', 1) }}|{{ 'xxhixx'.strip('x') }}|{{ s.startswith('  H') }}|{{ 'abc'.endswith(('x', 'c')) }}|{{ 'hi'.upper() }}|{{ 'Hi'.lower() }}|{{ 'a b'.title() }}|{{ 'aaa'.replace('a', 'b', 2) }}|{{ 'hello'.find('l') }}|{{ 'hello'.count('l') }}|{{ '{} and {}'.format(1, 'x') }}|{{ '-'.join(['a', 'b']) }}|{{ 'a\nb'.splitlines() }}"),
 ("dict methods", "{{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 5) }} {{ d.keys() | list }} {{ d.values() | list }} {{ d.items() | list }}"),
 ("globals", "{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ range(3, 0, -1) | list }} {{ dict(a=1, b='x') }} {{ namespace(a=1).a }}"),
 ("non-ascii", "{{ u }} {{ u[6] }} {{ u | length }} {{ u | reverse }}"),
 ("int dict keys", "{% set m = {1: 'one', 2: 'two'} %}{{ m[2] }} {{ m | dictsort }} {{ m | tojson }}"),
 ("line endings", "a\r\nb\rc\n"),
 ("adjacent strings", "{{ 'a' 'b' \"c\" }}"),
 ("python escapes", "{{ 'tab\\there\\u00e9\\x41' }}"),
 ("generation tag", "{% for m in msgs %}{% if m.role == 'assistant' %}{% generation %}{{ m.content }}{% endgeneration %}{% endif %}{% endfor %}"),
]
out = []
ext = []
for name, src in cases:
    e2 = env
    if "generation" in src:
        class G(jinja2.ext.Extension):
            tags = {"generation"}
            def parse(self, parser):
                lineno = next(parser.stream).lineno
                body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
                return jinja2.nodes.CallBlock(self.call_method("_r", []), [], [], body).set_lineno(lineno)
            def _r(self, caller): return caller()
        e2 = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols, G])
    r = e2.from_string(src).render(**ctx)
    out.append((name, src, r))
def cstr(s):
    b = s.encode()
    res = '"'
    for c in b:
        if c == 0x22: res += '\\"'
        elif c == 0x5c: res += '\\\\'
        elif c == 0x0a: res += '\\n'
        elif c == 0x0d: res += '\\r'
        elif c == 0x09: res += '\\t'
        elif c < 0x20 or c >= 0x7f: res += '\\x%02x""' % c
        else: res += chr(c)
    return res + '"'
print("// Generated with Jinja2 %s (ImmutableSandboxedEnvironment, trim_blocks," % jinja2.__version__)
print("// lstrip_blocks, loopcontrols, Hugging Face's tojson): name, template, output.")
print("const JinjaCase kJinjaCases[] = {")
for name, src, r in out:
    print("    {%s,\n     %s,\n     %s}," % (cstr(name), cstr(src), cstr(r)))
print("};")
print("const char* kJinjaContext = %s;" % cstr(json.dumps(ctx, ensure_ascii=False)))
