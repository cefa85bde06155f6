(function(){'use strict';
var D=JSON.parse(document.getElementById('hr-data').textContent),N=D.n;
function flags(list){var a=new Uint8Array(N);for(var k=0;k<list.length;k++)a[list[k]]=1;
return a;}
var KEPT=flags(D.kept),OWN=flags(D.own);
if(!D.rank){D.rank=new Int32Array(N);for(var r=0;r<N;r++)D.rank[D.order[r]]=r;}
function bid(i){return D.id?D.id[i]:D.id0+i;}
function s2(i){return D.s2?D.s2[i]:null;}
function docOf(i){return D.doc?D.doc[i]:0;}
var docs=document.getElementById('docs'),tip=document.getElementById('tip');
var insp=document.getElementById('insp'),list=document.getElementById('rank');
var more=document.getElementById('more'),sw=document.getElementById('only-kept');
var REASON={over_budget:'over budget',empty:'empty document',
truncated:'truncated to fit'};
var full=null,kept=null,hot=null,pinned=-1,shown=0,src=D.order,CHUNK=200,tipI=-1;
// A big page comes in parts: the first drawn, the others inert in template elements, each drawn
// (moved out of its template) when its placeholder comes near the screen.
var OWNER=new Map(),io=null;
function draw(ph){var t=ph.nextElementSibling;if(!ph.classList.contains('ph'))return;
ph.classList.remove('ph');if(io)io.unobserve(ph);
// Out of view a drawn part is not laid out (content-visibility: auto): it keeps the guessed
// height until it has been drawn once, so that nothing below it moves.
ph.style.containIntrinsicSize='auto '+ph.style.height;ph.style.height='';
OWNER.delete(t.content);ph.appendChild(t.content);t.remove();}
function drawn(e){if(e&&!e.isConnected){var ph=OWNER.get(e.getRootNode());if(ph)draw(ph);}
return e;}
function lazy(){var pages=docs.querySelectorAll('.page.lazy');if(!pages.length)return;
var root=getComputedStyle(docs).overflowY==='visible'?null:docs;
if(window.IntersectionObserver)io=new IntersectionObserver(function(es){
es.forEach(function(x){if(x.isIntersecting)draw(x.target);});},
{root:root,rootMargin:'1500px 0px'});
for(var p=0;p<pages.length;p++){var first=pages[p].querySelector('.part'),px=24;
var ts=pages[p].querySelectorAll('template');var h=first?first.offsetHeight:0;
var lines=0;if(h>0){first.querySelectorAll('div,li,tr,dt,dd,pre,blockquote,h1,h2,h3,h4,h5,h6,'+
'figcaption').forEach(function(){lines++;});if(lines)px=Math.min(200,Math.max(12,h/lines));}
for(var k=0;k<ts.length;k++){var ph=document.createElement('div');ph.className='part ph';
ph.style.height=Math.max(24,Math.round(+ts[k].getAttribute('data-lines')*px))+'px';
ts[k].parentNode.insertBefore(ph,ts[k]);OWNER.set(ts[k].content,ph);
if(io)io.observe(ph);else draw(ph);}}}
function build(cls){var a=new Array(N),pages=docs.querySelectorAll('.page.'+cls);
function from(root){var all=root.querySelectorAll('[data-b]');
for(var k=0;k<all.length;k++)a[+all[k].getAttribute('data-b')]=all[k];}
for(var p=0;p<pages.length;p++){from(pages[p]);
var ts=pages[p].querySelectorAll('template');for(var k=0;k<ts.length;k++)from(ts[k].content);}
return a;}
function fullEl(i){if(!full)full=build('full');return full[i]||null;}
function keptEl(i){if(!kept)kept=build('kept-view');return kept[i]||null;}
function copies(i){return [fullEl(i),keptEl(i)].filter(Boolean);}
function rk(i){return D.rank[i]<0?'\u2013':'#'+(D.rank[i]+1);}
function num(x){return x===null?'\u2013':(Math.abs(x)>=1000?x.toFixed(0):x.toFixed(3));}
function status(i){var r=D.reasons[D.reason[i]];return KEPT[i]?(r==='truncated'?
'kept, truncated':'kept'):'dropped: '+(REASON[r]||r||'not kept');}
var SEP=/^(TD|TH|TR|LI|DIV|H[1-6]|DT|DD|BR|TABLE|UL|OL|DL|CAPTION|BLOCKQUOTE|PRE)$/;
function textOf(e,limit){var out=[],n=0;(function walk(x){
for(var c=x.firstChild;c&&n<limit;c=c.nextSibling){if(c.nodeType===3){out.push(c.data);
n+=c.data.length;}else if(c.nodeType===1){var b=SEP.test(c.tagName);if(b)out.push(' ');
walk(c);if(b)out.push(' ');}}})(e);return out.join('');}
function snippet(i){var e=fullEl(i);if(!e)return '';var t='';
if(OWN[i]){var o=e.querySelectorAll('[data-o="'+i+'"]');
for(var k=0;k<o.length&&t.length<200;k++)t+=o[k].textContent+' ';}
else t=textOf(e,240);return t.replace(/\s+/g,' ').trim().slice(0,200);}
function add(p,tag,cls,text){var e=document.createElement(tag);if(cls)e.className=cls;
if(text!==undefined)e.textContent=text;p.appendChild(e);return e;}
function show(i){insp.textContent='';
add(insp,'span','st '+(KEPT[i]?'kept':'drop'),status(i));
add(insp,'div','path',D.paths[D.path[i]]);var dl=add(insp,'dl');
function row(k,v){add(dl,'dt','',k);add(dl,'dd','',v);}
row('rank',rk(i)+(D.stage2?(s2(i)===null?' (stage 1)':' (stage 2)'):''));
row('stage-1 score',num(D.s1[i]));if(D.stage2)row('stage-2 score',num(s2(i)));
row('tokens',String(D.tokens[i]));if(D.docs>1)row('document',String(docOf(i)+1));
row('block id',String(bid(i)));var s=snippet(i);if(s)add(insp,'div','snip',s);}
function clear(){insp.textContent='';add(insp,'div','insp-empty',
'Hover or click a block to see its tag path, scores and rank.');}
function tipFor(i,x,y){if(i!==tipI){tipI=i;tip.textContent='';
add(tip,'b','',rk(i)+' \u00b7 '+status(i));add(tip,'div','','stage-1 '+num(D.s1[i])+
(D.stage2?' \u00b7 stage-2 '+num(s2(i)):'')+' \u00b7 '+D.tokens[i]+' tokens');
add(tip,'code','',D.paths[D.path[i]]);}tip.hidden=false;
var w=tip.offsetWidth,h=tip.offsetHeight,vw=window.innerWidth,vh=window.innerHeight;
tip.style.left=Math.max(4,Math.min(x+14,vw-w-4))+'px';
tip.style.top=(y+18+h>vh?Math.max(4,y-h-12):y+18)+'px';}
function blockAt(t){var e=t&&t.closest?t.closest('[data-b],[data-o]'):null;
return e&&docs.contains(e)?e:null;}
function idOf(e){var v=e.getAttribute('data-b');return +(v===null?e.getAttribute('data-o'):v);}
function unhot(){if(hot){hot.classList.remove('hl');hot=null;}}
docs.addEventListener('mousemove',function(ev){var e=blockAt(ev.target);
if(!e){unhot();tip.hidden=true;if(pinned<0)clear();return;}var i=idOf(e);
if(e!==hot){unhot();hot=e;e.classList.add('hl');if(pinned<0)show(i);}
tipFor(i,ev.clientX,ev.clientY);});
docs.addEventListener('mouseleave',function(){unhot();tip.hidden=true;if(pinned<0)clear();});
docs.addEventListener('click',function(ev){var e=blockAt(ev.target);
if(e){ev.preventDefault();select(idOf(e),false);}});
function unselect(){if(pinned<0)return;copies(pinned).forEach(function(e){
e.classList.remove('sel');});var on=list.querySelector('button.on');
if(on)on.classList.remove('on');pinned=-1;}
function select(i,scroll){var again=pinned===i;unselect();if(again&&!scroll){clear();return;}
pinned=i;show(i);copies(i).forEach(function(e){e.classList.add('sel');});
var b=list.querySelector('button[data-i="'+i+'"]');if(b)b.classList.add('on');
var e=sw.checked?keptEl(i):fullEl(i);if(scroll&&e){reveal(drawn(e));
e.classList.remove('flash');void e.offsetWidth;e.classList.add('flash');}}
function reveal(e){var n=0,calm=0;(function go(){
var r=e.getBoundingClientRect(),v=docs.getBoundingClientRect();
var off=Math.abs((r.top+r.bottom)/2-(v.top+Math.min(v.bottom,window.innerHeight))/2);
if(off>40&&r.height<v.height){e.scrollIntoView({block:'center'});calm=0;}else calm++;
if(++n<30&&calm<3)requestAnimationFrame(go);})();}
function item(i){var li=document.createElement('li');
var b=add(li,'button',KEPT[i]?'kept':'drop');b.type='button';
b.setAttribute('data-i',String(i));add(b,'span','rk',rk(i));
add(b,'span','dot'+(KEPT[i]?' kept':''));
add(b,'span','sc',num(s2(i)!==null?s2(i):D.s1[i]));
add(b,'span','sn',(D.docs>1?'D'+(docOf(i)+1)+' \u00b7 ':'')+(snippet(i)||D.paths[D.path[i]]));
b.title=status(i);if(i===pinned)b.classList.add('on');return li;}
function fill(reset){if(reset){src=sw.checked?D.order.filter(function(i){return KEPT[i];}):
D.order;list.textContent='';shown=0;}var end=Math.min(src.length,shown+CHUNK);
var f=document.createDocumentFragment();for(var k=shown;k<end;k++)f.appendChild(item(src[k]));
list.appendChild(f);shown=end;var left=src.length-shown;more.hidden=left<=0;
more.textContent='Show '+Math.min(CHUNK,left)+' more ('+left+' left)';
document.getElementById('list-n').textContent=src.length+(sw.checked?' kept':' blocks');}
list.addEventListener('click',function(ev){var b=ev.target.closest('button[data-i]');
if(b)select(+b.getAttribute('data-i'),true);});
more.addEventListener('click',function(){fill(false);});
sw.addEventListener('change',function(){unhot();tip.hidden=true;
document.body.classList.toggle('only-kept',sw.checked);fill(true);});
document.addEventListener('keydown',function(ev){if(ev.key==='Escape'){unselect();clear();}});
lazy();if(sw.checked)document.body.classList.add('only-kept');fill(true);
document.body.setAttribute('data-ready','1');
})();
